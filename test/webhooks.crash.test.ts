// `kiln serve` SIGKILLed while a delivery is in flight (its receiver has the request and has not
// answered): the message was written with the event, so the restarted service delivers it — the
// same webhook-id and body — within seconds of starting (the dead worker's job is unlocked at once).

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { test } from 'node:test';
import { until } from './_generations.ts';
import { api, createAccount, createKey, onCleanup, startServer } from './_setup.ts';
import { startReceiver, verify } from './_webhooks.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'kiln.js');

function serve(dbUrl: string): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, [BIN, 'serve'], {
    env: { ...process.env, DATABASE_URL: dbUrl, PORT: '0', KILN_LOG: 'silent', KILN_WEBHOOK_ALLOW_PRIVATE: '1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  onCleanup(async () => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });
  return new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: child.stdout! });
    rl.on('line', (l) => {
      const m = /listening on (http:\S+)/.exec(l);
      if (m) resolve({ child, base: m[1]! });
    });
    child.once('exit', (code, sig) => reject(new Error(`kiln serve exited early (${code ?? sig})`)));
  });
}

test('kiln serve killed with a delivery in flight delivers it after the restart', { timeout: 120_000 }, async (t) => {
  // The in-process server here only answers the API (no worker): the spawned service delivers.
  const srv = await startServer({ config: { webhookAllowPrivate: true } });
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const { key } = await createKey(srv.db.sql, a.id);
  const rcv = await startReceiver();
  let answer = false;
  rcv.reply = () => (answer ? { status: 200 } : { hang: true });
  const e = (await api(srv.base, key, '/webhooks', { body: { url: rcv.url } })).body;

  const first = await serve(srv.db.url);
  const gen = await api(first.base, key, '/generations', { body: { type: 'code', model: 'local/coder', prompt: 'crash' } });
  assert.equal(gen.status, 202);
  const [inFlight] = await rcv.wait(1, undefined, 30_000);
  first.child.kill('SIGKILL');
  await new Promise((r) => first.child.once('exit', r));
  const [pending] = (await api(srv.base, key, `/webhooks/${e.id}/deliveries`)).body.data;
  assert.equal(pending.status, 'pending');
  assert.equal(pending.attempts, 0, 'the attempt never finished');

  answer = true;
  const restarted = Date.now();
  await serve(srv.db.url);
  const [, again] = await rcv.wait(2, undefined, 60_000);
  t.diagnostic(`delivered ${again!.at - restarted} ms after the restart began`);
  assert.equal(again!.headers['webhook-id'], inFlight!.headers['webhook-id']);
  assert.equal(again!.body, inFlight!.body);
  assert.equal(verify(e.secret, again!).data.id, gen.body.id);
  const d = await until('the log to say delivered', async () => {
    const [x] = (await api(srv.base, key, `/webhooks/${e.id}/deliveries`)).body.data;
    return x.status === 'delivered' && x;
  });
  assert.equal(d.attempts, 1);
});
