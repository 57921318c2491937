// A fresh API process answers its very first burst correctly: the batched authorizer must not
// fail closed while its connections are still being opened.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connect } from '../src/db/pool.ts';
import { api, createAccount, createKey, createTestDb, onCleanup, startServer } from './_setup.ts';

test('the first concurrent requests of a new process are all answered', async () => {
  const db = await createTestDb();
  const a = await createAccount(db.sql);
  const { key } = await createKey(db.sql, a.id);
  // A separate pool that has never connected, as in a freshly started process.
  const sql = connect(db.url, { max: 10 });
  onCleanup(() => sql.end({ timeout: 5 }));
  const srv = await startServer({ db: { ...db, app: sql } });
  const results = await Promise.all(Array.from({ length: 60 }, (_, i) => api(srv.base, key, i % 2 ? '/usage' : '/models')));
  const statuses = results.map((r) => r.status);
  assert.deepEqual([...new Set(statuses)], [200], JSON.stringify(results.find((r) => r.status !== 200)?.body));
});
