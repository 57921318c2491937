// KILN_EVENT_RETENTION: the workers' sweep removes events older than the period with their
// webhook deliveries and attempts, never an event whose delivery is still pending (a redelivery
// in flight), never a newer event, and nothing at all with `forever`. Sweeps in several workers
// split a backlog without waiting on each other or removing anything twice.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import postgres from 'postgres';
import { ConfigError, loadConfig } from '../src/config.ts';
import { startTestWorker, until } from './_generations.ts';
import { api, createAccount, createKey, startServer, withEnv, type TestServer } from './_setup.ts';
import { startReceiver } from './_webhooks.ts';

let srv: TestServer;

before(async () => {
  srv = await startServer({ config: { webhookAllowPrivate: true, webhookRetrySchedule: [], workerHeartbeatSeconds: 1 } });
});

test('KILN_EVENT_RETENTION: 30 days unless set, at least a day, or forever', () => {
  assert.equal(withEnv({ KILN_EVENT_RETENTION: undefined }, loadConfig).eventRetentionSeconds, 30 * 86_400);
  assert.equal(withEnv({ KILN_EVENT_RETENTION: '7d' }, loadConfig).eventRetentionSeconds, 7 * 86_400);
  assert.equal(withEnv({ KILN_EVENT_RETENTION: '36h' }, loadConfig).eventRetentionSeconds, 36 * 3600);
  assert.equal(withEnv({ KILN_EVENT_RETENTION: 'forever' }, loadConfig).eventRetentionSeconds, undefined);
  for (const bad of ['12h', '90s', '0d', '30', 'never', '99999999d']) {
    assert.throws(() => withEnv({ KILN_EVENT_RETENTION: bad }, loadConfig), (e: any) => e instanceof ConfigError && /KILN_EVENT_RETENTION/.test(e.message), bad);
  }
});

/** Waits until every live worker has beaten twice after now: each has run at least one whole full sweep since. */
async function twoSweeps() {
  // Attaching a worker's graphile-worker pool also stamps last_seen, with no sweep behind it: a
  // worker just started may do so after `t`, so wait for it first (CI once counted it as a beat).
  await until('every worker\'s pool to be attached', async () =>
    (await srv.db.sql`select 1 from kiln_private.worker_heartbeats where pool_id is null`).length === 0, 20_000, 50);
  const [{ t }] = await srv.db.sql`select clock_timestamp() as t`;
  let beats = 0;
  let last: Date | null = null;
  await until('two heartbeats', async () => {
    const [row] = await srv.db.sql`select min(last_seen) as seen from kiln_private.worker_heartbeats where last_seen > ${t}`;
    if (row?.seen && (!last || row.seen > last)) {
      last = row.seen;
      beats++;
    }
    return beats >= 2;
  }, 20_000, 100);
}

test('old events go with their deliveries and attempts; a pending delivery\'s event, newer events and forever stay', async () => {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const { key } = await createKey(srv.db.sql, a.id);
  const ok = await startReceiver();
  const down = await startReceiver();
  down.reply = () => ({ status: 500 });
  const endpoint = async (url: string) => {
    const res = await api(srv.base, key, '/webhooks', { body: { url } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.id as string;
  };
  const okId = await endpoint(ok.url);
  const downId = await endpoint(down.url);
  const deliveries = async (id: string) => (await api(srv.base, key, `/webhooks/${id}/deliveries?limit=100`)).body.data as any[];

  // One attempt each (no retries): delivered to one endpoint, failed at the other.
  const sender = await startTestWorker(srv, { eventRetentionSeconds: undefined });
  for (let i = 0; i < 3; i++) {
    assert.equal((await api(srv.base, key, `/webhooks/${okId}/test`, { method: 'POST' })).status, 202);
    assert.equal((await api(srv.base, key, `/webhooks/${downId}/test`, { method: 'POST' })).status, 202);
  }
  await until('every delivery to end', async () => {
    const all = [...(await deliveries(okId)), ...(await deliveries(downId))];
    return all.length === 6 && all.every((d) => d.status !== 'pending');
  }, 30_000);
  assert.deepEqual((await deliveries(okId)).map((d) => d.status), ['delivered', 'delivered', 'delivered']);
  assert.deepEqual((await deliveries(downId)).map((d) => d.status), ['failed', 'failed', 'failed']);
  await sender.stop();

  // An event with no endpoint at all, in another scope.
  const b = await createAccount(srv.db.sql);
  const [{ id: bare }] = await srv.db.sql`select kiln_private.emit_event(${b.id}::uuid, 'webhook.test', null, '{}'::json) as id`;

  // Everything so far is made 31 days old; then one failed delivery is sent again (pending, with
  // no worker running to send it) and one more event arrives now.
  const events = (await srv.db.sql`select id from kiln_private.events where scope_id = any(${[a.id, b.id]}::uuid[])`).map((r) => r.id);
  assert.equal(events.length, 7);
  await srv.db.sql`update kiln_private.events set occurred_at = now() - interval '31 days' where id = any(${events}::bigint[])`;
  const [again, ...failed] = await deliveries(downId);
  const redo = await api(srv.base, key, `/webhooks/${downId}/deliveries/${again.id}/redeliver`, { method: 'POST' });
  assert.equal(redo.status, 202);
  assert.equal((await api(srv.base, key, `/webhooks/${okId}/test`, { method: 'POST' })).status, 202);
  const attempts = async () => Number((await srv.db.sql`
    select count(*) as n from kiln_private.webhook_attempts t join kiln_private.webhook_deliveries d on d.id = t.delivery_id
    where d.endpoint_id = any(${[okId, downId]}::uuid[])`)[0].n);
  assert.equal(await attempts(), 6);

  // A worker that keeps events forever removes nothing in two whole sweeps…
  const keeper = await startTestWorker(srv, { eventRetentionSeconds: undefined });
  await twoSweeps();
  assert.equal((await srv.db.sql`select id from kiln_private.events where id = any(${events}::bigint[])`).length, 7);
  // …(it sends the redelivery and the new test event, into receivers that still refuse / accept)…
  await until('the redelivery and the new event to end', async () => {
    const all = [...(await deliveries(okId)), ...(await deliveries(downId))];
    return all.length === 7 && all.every((d) => d.status !== 'pending');
  }, 30_000);
  await keeper.stop();

  // …so send the failed one again into a receiver that holds it unanswered until the sweeps are
  // checked (pending all the while), and sweep with the default retention (30 days).
  let answer!: () => void;
  const held = new Promise<void>((resolve) => { answer = resolve; });
  down.reply = () => ({ status: 204, until: held });
  assert.equal((await api(srv.base, key, `/webhooks/${downId}/deliveries/${again.id}/redeliver`, { method: 'POST' })).status, 202);
  const purger = await startTestWorker(srv, { webhookRetrySchedule: [], webhookTimeoutMs: 60_000, eventRetentionSeconds: 30 * 86_400 });
  await twoSweeps();
  assert.equal((await deliveries(downId)).find((d) => d.id === again.id)?.status, 'pending', 'still in flight while the sweeps ran');

  const left = (await srv.db.sql`select id from kiln_private.events where scope_id = any(${[a.id, b.id]}::uuid[]) order by id`).map((r) => r.id);
  const [{ event_id: pendingEvent }] = await srv.db.sql`select event_id from kiln_private.webhook_deliveries where id = ${again.deliveryId}`;
  assert.ok(!left.includes(bare), 'an old event with no deliveries is removed');
  assert.ok(left.includes(pendingEvent), 'the event of a pending delivery stays');
  assert.equal(left.length, 2, `the pending delivery's event and the newer event stay: ${left}`);
  assert.ok(left.every((id) => id === pendingEvent || !events.includes(id)));
  const okLeft = await deliveries(okId);
  assert.equal(okLeft.length, 1, 'only the newer event\'s delivery is left in the log');
  assert.equal(okLeft[0].status, 'delivered');
  const downLeft = await deliveries(downId);
  assert.deepEqual(downLeft.map((d) => d.id), [again.id], 'the failed deliveries of old events are gone');
  for (const d of failed) {
    const gone = await api(srv.base, key, `/webhooks/${downId}/deliveries/${d.id}/redeliver`, { method: 'POST' });
    assert.equal(gone.status, 404, 'a purged delivery cannot be sent again');
  }
  const [{ n: orphanAttempts }] = await srv.db.sql`
    select count(*)::int as n from kiln_private.webhook_attempts t
    where not exists (select 1 from kiln_private.webhook_deliveries d where d.id = t.delivery_id)`;
  assert.equal(orphanAttempts, 0);
  assert.ok(await attempts() >= 2, 'the remaining deliveries keep their attempts');

  // Once the redelivery ends, its old event goes at the next sweep.
  answer();
  await until('the old event of the finished redelivery to be purged', async () =>
    (await srv.db.sql`select 1 from kiln_private.events where id = ${pendingEvent}`).length === 0, 40_000, 200);
  await purger.stop();
  assert.deepEqual(await deliveries(downId), []);
  assert.equal((await deliveries(okId)).length, 1);
});

test('sweeps in two sessions split a backlog: every old event removed once, none waited on or raised', async () => {
  const scope = (await createAccount(srv.db.sql)).id;
  const N = 3000;
  await srv.db.sql`select kiln_private.emit_event(${scope}::uuid, 'webhook.test', null, '{}'::json) from generate_series(1, ${N})`;
  await srv.db.sql`update kiln_private.events set occurred_at = now() - interval '2 days' where scope_id = ${scope}`;
  const sessions = [postgres(srv.db.url, { max: 1, onnotice: () => {} }), postgres(srv.db.url, { max: 1, onnotice: () => {} })];
  try {
    const sweep = async (sql: postgres.Sql) => {
      const counts: number[] = [];
      for (;;) {
        // A small batch and a pause inside the transaction keep both sessions working at once;
        // a lock timeout far shorter than the pause fails a sweep that waits on the other's rows.
        const n = await sql.begin(async (tx) => {
          await tx`set local lock_timeout = '20ms'`;
          const [{ n }] = await tx`select kiln.purge_events(86400, 100) as n`;
          await tx`select pg_sleep(0.1)`;
          return n as number;
        });
        if (n === 0) return counts;
        counts.push(n);
      }
    };
    const [one, two] = await Promise.all(sessions.map(sweep));
    const total = [...one!, ...two!].reduce((x, y) => x + y, 0);
    // Other test files' events are in this database too; only this scope's were made old.
    assert.equal(total, N, `removed ${total}`);
    assert.ok(one!.length > 0 && two!.length > 0, `both sessions removed some: ${one!.length} and ${two!.length} batches`);
    const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.events where scope_id = ${scope}`;
    assert.equal(n, 0);
  } finally {
    await Promise.all(sessions.map((s) => s.end({ timeout: 1 })));
  }
});

test('purge_events refuses a missing or non-positive age or limit', async () => {
  for (const [age, limit] of [[0, 10], [86400, 0], [null, 10], [-5, 10]]) {
    await assert.rejects(srv.db.sql`select kiln.purge_events(${age}::int, ${limit}::int)`, (e: any) => e.code === 'KI001', `${age}, ${limit}`);
  }
});

test('a redelivery that commits while a sweep waits on its row keeps the delivery and its event', async () => {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const { key } = await createKey(srv.db.sql, a.id);
  const rcv = await startReceiver();
  const created = await api(srv.base, key, '/webhooks', { body: { url: rcv.url } });
  assert.equal(created.status, 201);
  const endpointId = created.body.id as string;
  // No worker runs here: the test event's delivery is made failed and a month old by hand.
  assert.equal((await api(srv.base, key, `/webhooks/${endpointId}/test`, { method: 'POST' })).status, 202);
  const [d] = await srv.db.sql`
    update kiln_private.webhook_deliveries set status = 'failed', failed_at = now(), next_attempt_at = null
    where endpoint_id = ${endpointId} returning id, event_id`;
  await srv.db.sql`update kiln_private.events set occurred_at = now() - interval '40 days' where id = ${d!.event_id}`;

  const redeliverer = postgres(srv.db.url, { max: 1, onnotice: () => {} });
  const sweeper = postgres(srv.db.url, { max: 1, onnotice: () => {} });
  try {
    const [{ pid }] = await sweeper`select pg_backend_pid() as pid`;
    let commit!: () => void;
    const held = new Promise<void>((r) => { commit = r; });
    let redelivered!: () => void;
    const pendingNow = new Promise<void>((r) => { redelivered = r; });
    // The redelivery takes the delivery's row and makes it pending, and holds its transaction open…
    const redelivery = redeliverer.begin(async (tx) => {
      const [{ ok }] = await tx`select kiln.redeliver_webhook(${a.id}::uuid, ${endpointId}::uuid, ${d!.id}::uuid) as ok`;
      assert.equal(ok, true);
      redelivered();
      await held;
    });
    await pendingNow;
    // …while a sweep picks the old event (the delivery still reads failed to it) and waits on that row.
    const sweep = sweeper`select kiln.purge_events(${30 * 86_400}::int, 100) as n`.execute();
    await until('the sweep to wait on the delivery\'s row', async () =>
      (await srv.db.sql`select 1 from pg_stat_activity where pid = ${pid} and wait_event_type = 'Lock'`).length > 0, 10_000);
    commit();
    await redelivery;
    const [{ n }] = await sweep;
    assert.equal(n, 0, 'the event of a delivery made pending meanwhile is kept');
    const [kept] = await srv.db.sql`select status from kiln_private.webhook_deliveries where id = ${d!.id}`;
    assert.equal(kept?.status, 'pending', 'the redelivery is not lost');
    assert.equal((await srv.db.sql`select 1 from kiln_private.events where id = ${d!.event_id}`).length, 1);
  } finally {
    await Promise.all([redeliverer.end({ timeout: 1 }), sweeper.end({ timeout: 1 })]);
  }
});

test('old events held by pending deliveries do not stall the sweep behind them', async () => {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const { key } = await createKey(srv.db.sql, a.id);
  const rcv = await startReceiver();
  const created = await api(srv.base, key, '/webhooks', { body: { url: rcv.url } });
  assert.equal(created.status, 201);
  // No worker runs: three test events whose deliveries stay pending, then one with no endpoint.
  for (let i = 0; i < 3; i++) assert.equal((await api(srv.base, key, `/webhooks/${created.body.id}/test`, { method: 'POST' })).status, 202);
  const other = (await createAccount(srv.db.sql)).id;
  const [{ id: bare }] = await srv.db.sql`select kiln_private.emit_event(${other}::uuid, 'webhook.test', null, '{}'::json) as id`;
  // Whatever old events earlier tests left are not this test's business: gone first.
  while ((await srv.db.sql`select kiln.purge_events(${30 * 86_400}::int, 1000) as n`)[0].n > 0);
  await srv.db.sql`update kiln_private.events set occurred_at = now() - interval '40 days' where scope_id = any(${[a.id, other]}::uuid[])`;
  // A batch smaller than the held events still reaches the one behind them.
  const [{ n }] = await srv.db.sql`select kiln.purge_events(${30 * 86_400}::int, 2) as n`;
  assert.equal(n, 1);
  assert.equal((await srv.db.sql`select 1 from kiln_private.events where id = ${bare}`).length, 0);
  assert.equal((await srv.db.sql`select 1 from kiln_private.events where scope_id = ${a.id}`).length, 3);
});
