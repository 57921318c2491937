// The client's retry rule against a real 503: a server whose own throwaway Postgres is stopped
// answers 503; the client keeps sending the POST (same Idempotency-Key) until Postgres is back,
// and the POST lands exactly once — one generation, one ledger reservation. The suite's shared
// Postgres is never touched: this file starts its own cluster on its own data dir and port.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, test } from 'node:test';
import { createKilnClient } from 'kiln/client';
import { startEmbedded, type EmbeddedHandle } from '../src/db/embedded.ts';
import { migrateAndSeed } from '../src/cli/boot.ts';
import { connect } from '../src/db/pool.ts';
import { charges } from './_generations.ts';
import { api, createAccount, createKey, onCleanup, startServer, type TestServer } from './_setup.ts';

let dataDir: string;
let pg: EmbeddedHandle;
let pgPort: number;
let srv: TestServer;
let key: string;
let accountId: string;

before(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-503-'));
  pg = await startEmbedded(dataDir, { fast: true });
  pgPort = Number(new URL(pg.url).port);
  // Cleanups run in reverse: the server and pool close first, then the cluster stops, then its files go.
  onCleanup(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
  onCleanup(() => pg.stop());
  await migrateAndSeed(pg.url, { includeCurrent: true });
  const sql = connect(pg.url, { max: 5 });
  onCleanup(() => sql.end({ timeout: 1 }));
  // Its own cluster (stopped by the test), where the service runs as the superuser that made it.
  srv = await startServer({ db: { url: pg.url, sql, app: sql, ownerUrl: pg.url } });
  const a = await createAccount(sql, { tier: 'pro' });
  accountId = a.id;
  key = (await createKey(sql, a.id)).key;
});

test('Postgres stopped: the server answers 503; the client retries the POST with one Idempotency-Key until it recovers; one generation, one reservation', async () => {
  const attempts: Array<{ status: number | null; idempotencyKey: string | null }> = [];
  const c = createKilnClient({
    baseUrl: srv.origin,
    apiKey: key,
    retry: { maxAttempts: 30, baseDelayMs: 100, maxDelayMs: 500 },
    fetch: async (r) => {
      const entry = { status: null as number | null, idempotencyKey: r.headers.get('idempotency-key') };
      attempts.push(entry);
      const res = await fetch(r);
      entry.status = res.status;
      return res;
    },
  });
  assert.equal((await c.usage.get()).tier, 'pro');
  attempts.length = 0;

  await pg.stop();
  const down = await api(srv.base, key, '/usage');
  assert.equal(down.status, 503, JSON.stringify(down.body));
  assert.equal(down.body.error.type, 'server_error');

  const creating = c.generations.create({ type: 'code', prompt: 'Through an outage', targetLanguage: 'tsx' });
  // Let the client meet the outage more than once before Postgres comes back.
  for (let i = 0; attempts.filter((a) => a.status === 503).length < 2; i++) {
    assert.ok(i < 200, `the client did not retry: ${JSON.stringify(attempts)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  pg = await startEmbedded(dataDir, { fast: true, port: pgPort });
  const accepted = await creating;
  assert.equal(accepted.status, 'pending');

  assert.ok(attempts.length >= 3, JSON.stringify(attempts));
  assert.deepEqual(attempts.slice(0, -1).map((a) => a.status), Array(attempts.length - 1).fill(503), 'every attempt before the last was a 503');
  assert.equal(attempts.at(-1)!.status, 202);
  assert.match(attempts[0]!.idempotencyKey ?? '', /^[0-9a-f-]{36}$/);
  assert.ok(attempts.every((a) => a.idempotencyKey === attempts[0]!.idempotencyKey), 'the same key on every attempt');

  const rows = await srv.db.sql`select id from kiln_private.generations where account_id = ${accountId}`;
  assert.deepEqual(rows.map((r) => r.id), [accepted.id], 'exactly one generation');
  assert.deepEqual((await charges(srv.db.sql, accepted.id)).map((ch) => ch.status), ['reserved'], 'exactly one reservation');
});
