// budget.threshold: a settlement that takes the pool's settled usage across 50, 80 or 100 % of its
// budget emits one event, once per threshold, pool and period — a higher budget later in the same
// period does not announce a threshold again.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { startTestWorker, waitFor } from './_generations.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { startReceiver, verify } from './_webhooks.ts';

let srv: TestServer;

before(async () => {
  srv = await startServer({ config: { webhookAllowPrivate: true } });
  await startTestWorker(srv);
});

test('each threshold fires once, from the settlement that crosses it, with the pool\'s figures', async () => {
  // local/sketch settles 1000 µ$ per image: 5 images walk a 5000 µ$ budget to 100 %.
  const a = await createAccount(srv.db.sql, { tier: 'pro', budgetMicros: 5000 });
  const { key } = await createKey(srv.db.sql, a.id);
  const rcv = await startReceiver();
  const e = (await api(srv.base, key, '/webhooks', { body: { url: rcv.url, events: ['budget.threshold'] } })).body;

  const image = async () => {
    const res = await api(srv.base, key, '/generations', { body: { type: 'image', model: 'local/sketch', prompt: 'p' } });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    const done = await waitFor(srv, key, res.body.id);
    assert.equal(done.status, 'completed');
  };
  for (let i = 0; i < 5; i++) await image();
  const got = await rcv.wait(3);
  const msgs = got.map((d) => verify(e.secret, d)).sort((x, y) => x.data.threshold - y.data.threshold);
  assert.deepEqual(msgs.map((m) => [m.data.threshold, m.data.usedMicros]), [[50, 3000], [80, 4000], [100, 5000]]);
  const [{ period }] = await srv.db.sql`select to_char(kiln_private.period_start(period_anchor, now()) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as period from kiln_private.accounts where id = ${a.id}`;
  const usage = (await api(srv.base, key, '/usage')).body;
  for (const m of msgs) {
    assert.equal(m.type, 'budget.threshold');
    assert.equal(m.data.scope, 'personal');
    assert.equal(m.data.workspaceId, null);
    assert.equal(m.data.budgetMicros, 5000);
    assert.equal(m.data.periodStart, period);
    assert.equal(m.data.resetsAt, usage.resets_at);
  }

  // A larger budget in the same period: usage crosses 50 % of it again, but 50 % was announced.
  await srv.db.sql`select kiln.update_account(${a.id}, null, 8000, true)`;
  await image(); // 6000 of 8000 = 75 %
  await image(); // 7000 of 8000 = 87.5 %: 80 % was announced too
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal(rcv.got.length, 3, 'no threshold announced twice in one period');
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.events where scope_id = ${a.id} and type = 'budget.threshold'`;
  assert.equal(n, 3);
});

test('no budget (unlimited): no threshold events', async () => {
  const a = await createAccount(srv.db.sql, { tier: 'pro', budgetMicros: null });
  const { key } = await createKey(srv.db.sql, a.id);
  const res = await api(srv.base, key, '/generations', { body: { type: 'image', model: 'local/sketch', prompt: 'p' } });
  await waitFor(srv, key, res.body.id);
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.events where scope_id = ${a.id} and type = 'budget.threshold'`;
  assert.equal(n, 0);
});
