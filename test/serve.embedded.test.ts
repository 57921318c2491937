// `npm start` on a fresh machine: embedded Postgres, migrations, a printed development key that
// works, and a clean SIGTERM shutdown that leaves no postgres behind.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { api } from './_setup.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'kiln.js');

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
