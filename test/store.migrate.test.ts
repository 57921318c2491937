// `kiln store migrate` (the real CLI, as a separate process) while the service serves: to s3
// killed half-way and resumed, run twice, then back to postgres stopped with SIGINT and resumed.
// Every read during the move finds its object wherever it is, byte for byte; the bucket ends empty
// once the sweep has taken the keys given up.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import path from 'node:path';
import { before, test } from 'node:test';
import sharp from 'sharp';
import { objectPath, putObject, publicUrl, signedUrl } from '../src/storage/store.ts';
import { sweepOrphans } from '../src/storage/sweep.ts';
import { startS3, type TestS3 } from './_s3.ts';
import { createAccount, onCleanup, startServer, type TestServer } from './_setup.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'kiln.js');
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

let s3: TestS3;
let srv: TestServer;
const expected = new Map<string, { url: string; sha: string }>();

before(async () => {
  s3 = await startS3();
  // The API serves from postgres (KILN_STORE unset) with the bucket configured, as during a move.
  srv = await startServer({ config: { store: { ...s3.store(), backend: 'postgres' } } });
  const account = (await createAccount(srv.db.sql)).id;
  for (let i = 0; i < 24; i++) {
    const data = await sharp({ create: { width: 8 + i, height: 8, channels: 3, background: { r: i * 10, g: 100, b: 200 } } }).png().toBuffer();
    const visibility = i % 3 === 0 ? 'public' : 'private';
    const p = objectPath(account, i % 3 === 0 ? 'transforms' : 'generations', 'png', randomUUID());
    await putObject(srv.ctx, { path: p, owner: account, data, contentType: 'image/png', format: 'png', width: 8 + i, height: 8, visibility });
    expected.set(p, { url: visibility === 'public' ? publicUrl(srv.ctx, p) : await signedUrl(srv.ctx, p, 3600), sha: sha(data) });
  }
  for (const seed of await srv.db.sql`select path, data from kiln_private.objects where owner_id is null`) {
    expected.set(seed.path, { url: publicUrl(srv.ctx, seed.path), sha: sha(seed.data) });
  }
});

/** Reads every object through /files in a loop (following redirects into the bucket) until stopped. */
function readers() {
  let stop = false;
  let reads = 0;
  const failures: string[] = [];
  const loop = (async () => {
    while (!stop) {
      await Promise.all([...expected].map(async ([p, e]) => {
        const res = await fetch(e.url);
        const body = Buffer.from(await res.arrayBuffer());
        if (res.status !== 200 || sha(body) !== e.sha) failures.push(`${p}: ${res.status}`);
        reads++;
      }));
    }
  })();
  return { async end() { stop = true; await loop; return { reads, failures }; } };
}

function migrate(to: string) {
  const child = spawn(process.execPath, [BIN, 'store', 'migrate', '--to', to], {
    env: { ...process.env, ...s3.env({ gate: true }), DATABASE_URL: srv.db.url, KILN_LOG: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  onCleanup(async () => { if (child.exitCode === null) child.kill('SIGKILL'); });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  let said: (() => void) | null = null;
  const stopping = new Promise<void>((r) => (said = r));
  child.stderr.on('data', (d) => {
    err += d;
    if (err.includes('kiln: stopping after the object in hand')) said!();
  });
  const done = new Promise<{ code: number | null; signal: string | null; lines: any[] }>((resolve) => {
    child.once('exit', (code, signal) => {
      // Not a terminal: every line is JSON.
      const lines = out.split('\n').filter(Boolean).map((l) => { try { return JSON.parse(l); } catch { throw new Error(`not a JSON line: ${l}\n${err}`); } });
      resolve({ code, signal, lines });
    });
  });
  // `stopping`: the process has taken the signal (it says so on stderr).
  return { child, done, stopping };
}

async function backends() {
  const rows = await srv.db.sql`select backend, count(*)::int as n from kiln_private.objects group by backend`;
  return Object.fromEntries(rows.map((r) => [r.backend, r.n]));
}

test('to s3 while serving: killed half-way, resumed, and a second run is harmless', async () => {
  const total = expected.size;
  const r = readers();
  const gate = s3.hold(10);
  const first = migrate('s3');
  await gate.held; // the 11th copy reached the bucket; the process has not switched its row
  first.child.kill('SIGKILL');
  gate.release();
  assert.equal((await first.done).signal, 'SIGKILL');
  assert.deepEqual(await backends(), { s3: 10, postgres: total - 10 }, 'ten objects switched, one at a time');

  const second = await migrate('s3').done;
  assert.equal(second.code, 0);
  const last = second.lines.at(-1);
  assert.equal(last.event, 'done');
  assert.equal(last.moved, total - 10);
  assert.equal(last.remaining, 0);
  for (const l of second.lines.slice(0, -1)) assert.equal(l.event, 'progress');
  assert.deepEqual(await backends(), { s3: total });
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.objects where data is not null`;
  assert.equal(n, 0, 'no bytes left in Postgres');

  const third = await migrate('s3').done;
  assert.equal(third.code, 0);
  assert.deepEqual({ event: third.lines.at(-1).event, moved: third.lines.at(-1).moved }, { event: 'done', moved: 0 });

  const { reads, failures } = await r.end();
  assert.deepEqual(failures, []);
  assert.ok(reads >= total, `${reads} reads`);
  // Every row's key holds its bytes; the killed run's extra copy is only noted (swept later).
  const keys = new Set(await s3.keys());
  for (const row of await srv.db.sql`select location from kiln_private.objects`) assert.ok(keys.has(row.location));
  assert.equal(keys.size, total + 1);
});

test('back to postgres while serving: stopped with SIGINT, resumed; the sweep empties the bucket', async () => {
  const total = expected.size;
  const r = readers();
  const gate = s3.hold(7, 'GET');
  const first = migrate('postgres');
  await gate.held;
  first.child.kill('SIGINT'); // stops after the object in hand
  // Released once the process has taken the signal: released at once, the held answer could
  // reach it first and the next object would be in hand when the signal is read.
  await first.stopping;
  gate.release();
  const stopped = await first.done;
  assert.equal(stopped.code, 130);
  const last = stopped.lines.at(-1);
  assert.equal(last.event, 'stopped');
  assert.equal(last.moved, 8);
  assert.equal(last.remaining, total - 8);
  assert.deepEqual(await backends(), { postgres: 8, s3: total - 8 });

  const resumed = await migrate('postgres').done;
  assert.equal(resumed.code, 0);
  assert.equal(resumed.lines.at(-1).moved, total - 8);
  assert.deepEqual(await backends(), { postgres: total });
  const { failures } = await r.end();
  assert.deepEqual(failures, []);
  for (const [p, e] of expected) {
    const [row] = await srv.db.sql`select data, location from kiln_private.objects where path = ${p}`;
    assert.equal(sha(row.data), e.sha);
    assert.equal(row.location, null);
  }
  // The keys given up wait out the grace (a presigned URL may still point at them), then go.
  assert.ok((await s3.keys()).length > 0);
  await sweepOrphans(srv.ctx, 0);
  assert.deepEqual(await s3.keys(), []);
});

test('on a terminal: a progress bar with the count and the rate', async () => {
  // `script` gives the command a pseudo-terminal as its stdout.
  const child = spawn('script', ['-qefc', `${process.execPath} ${BIN} store migrate --to s3`, '/dev/null'], {
    env: { ...process.env, ...s3.env(), DATABASE_URL: srv.db.url, KILN_LOG: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  onCleanup(async () => { if (child.exitCode === null) child.kill('SIGKILL'); });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const code = await new Promise((r) => child.once('exit', r));
  assert.equal(code, 0, out);
  const total = expected.size;
  assert.match(out, new RegExp(`\\r\\[#{30}\\] ${total}/${total} objects  \\d+\\.\\d/s  \\d+\\.\\d MB`));
  assert.match(out, new RegExp(`Done: ${total} objects moved to s3 in \\d+\\.\\d s \\(0 skipped; 0 left elsewhere\\)`));
  assert.ok(!/^\{/m.test(out), 'no JSON lines on a terminal');
  assert.deepEqual(await backends(), { s3: total });
});
