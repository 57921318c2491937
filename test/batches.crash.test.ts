// A 500-line batch through `kiln serve` SIGKILLed twice and restarted each time (docs/api.md,
// "Batches": whatever lane or turn a line waits in, it is never lost, never started twice and never
// charged twice, across crashes and restarts). Every line ends exactly once — the counts add up to
// 500, each generation reaches a terminal status once (a trigger of the test's records every
// transition into one), the results name every custom_id once — and is charged at most once: no
// generation has two charges, and the settled charges are the completed lines, their sum the
// batch's spend.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { spawnKiln, type Spawned } from './_live.ts';
import { until } from './_generations.ts';
import { api, createAccount, createKey, createTestDb, type TestDb } from './_setup.ts';

const LINES = 500;
const KILLS = 2;
const SLOTS = 8;

let db: TestDb;

before(async () => {
  db = await createTestDb();
  await db.sql`select kiln.upsert_model(${db.sql.json({
    id: 'local/brief', name: 'brief', category: 'text', provider: 'local', upstream: { delayMs: 100, stream: false },
    cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 100, markup: 1,
  })})`;
  // Every move of a batch line into a terminal status, as it commits.
  await db.sql.unsafe(`
    create table public.test_line_ends (generation_id uuid not null, from_status text not null, to_status text not null);
    create function public.tg_test_line_ends() returns trigger language plpgsql security definer as $$
    begin
      insert into public.test_line_ends values (new.id, old.status, new.status);
      return null;
    end $$;
    create trigger tg_test_line_ends after update of status on kiln_private.generations for each row
      when (old.status is distinct from new.status and new.status in ('completed', 'failed') and new.batch_id is not null)
      execute function public.tg_test_line_ends();`);
});

async function counts(key: string, base: string, id: string) {
  const res = await api(base, key, `/batches/${id}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as { status: string; requestCounts: { total: number; completed: number; failed: number; canceled: number }; spentMicros: number };
}

test(`SIGKILL of kiln serve ${KILLS} times during a ${LINES}-line batch: every line ends exactly once, charged at most once`, async (t) => {
  const a = await createAccount(db.sql, { tier: 'pro', budgetMicros: null });
  await db.sql`update kiln_private.accounts set parallel_slots = ${SLOTS} where id = ${a.id}`;
  const key = (await createKey(db.sql, a.id)).key;
  let proc: Spawned = await spawnKiln('serve', db.url);
  const body = Array.from({ length: LINES }, (_, i) =>
    JSON.stringify({ custom_id: `line-${i + 1}`, method: 'POST', url: '/api/v1/generations', body: { type: 'code', prompt: `crash line ${i + 1}`, model: 'local/brief' } })).join('\n');
  const res = await fetch(`${proc.base}/batches`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/jsonl' }, body });
  const created = (await res.json()) as { id: string };
  assert.equal(res.status, 202, JSON.stringify(created));
  const id = created.id;

  // Each kill comes once more lines have ended since the last start, with lines in flight.
  const killedAt: string[] = [];
  for (let k = 0; k < KILLS; k++) {
    const from = (await counts(key, proc.base, id)).requestCounts.completed;
    const c = await until(`lines ending after start ${k}`, async () => {
      const now = await counts(key, proc.base, id);
      return now.requestCounts.completed >= from + 80 ? now : null;
    }, 60_000, 20);
    const [{ inFlight }] = await db.sql`select count(*)::int as "inFlight" from kiln_private.generations where batch_id = ${id} and status = 'processing'`;
    await proc.stop('SIGKILL');
    killedAt.push(`${c.requestCounts.completed}/${LINES} completed, ${inFlight} processing`);
    proc = await spawnKiln('serve', db.url);
  }
  t.diagnostic(`killed at ${killedAt.join('; ')}`);
  assert.ok(killedAt.every((k) => !k.startsWith(`${LINES}/`)), 'both kills came before the batch ended');

  const done = await until('the batch ended', async () => {
    const b = await counts(key, proc.base, id);
    return b.status === 'in_progress' ? null : b;
  }, 120_000, 200);
  const diag = JSON.stringify(await db.sql`select status, error, attempts, crashes, count(*)::int as n from kiln_private.generations
    where batch_id = ${id} group by 1, 2, 3, 4 order by n desc`);
  assert.equal(done.status, 'completed', diag);
  assert.deepEqual(done.requestCounts, { total: LINES, completed: LINES, failed: 0, canceled: 0 }, diag);

  // Each generation reached a terminal status once.
  const ends = await db.sql`select generation_id, count(*)::int as n from public.test_line_ends group by 1`;
  assert.equal(ends.length, LINES, 'every line ended');
  assert.deepEqual(ends.filter((e) => e.n !== 1), [], 'no line ended twice');
  const [{ crashes }] = await db.sql`select coalesce(sum(crashes), 0)::int as crashes from kiln_private.generations where batch_id = ${id}`;
  t.diagnostic(`${crashes} executions cut off by the kills and taken over`);
  assert.ok(crashes >= 1, 'the kills cut off lines in flight');

  // The results name every custom_id once.
  const out = await fetch(`${proc.base}/batches/${id}/results`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(out.status, 200);
  const lines = (await out.text()).split('\n').filter(Boolean).map((l) => JSON.parse(l));
  assert.equal(lines.length, LINES);
  assert.equal(new Set(lines.map((l) => l.custom_id)).size, LINES);
  assert.ok(lines.every((l) => l.response?.status_code === 200));

  // Charged at most once: one charge per generation, settled for the completed ones, summing to the spend.
  const ledger = await db.sql`select c.generation_id, count(*)::int as n, count(*) filter (where c.status = 'settled')::int as settled,
      coalesce(sum(c.settled_micros) filter (where c.status = 'settled'), 0)::bigint::text as micros
    from kiln_private.charges c join kiln_private.generations g on g.id = c.generation_id where g.batch_id = ${id} group by 1`;
  assert.deepEqual(ledger.filter((l) => l.n !== 1), [], 'no generation with two charges');
  assert.equal(ledger.reduce((n, l) => n + l.settled, 0), done.requestCounts.completed, 'settled charges = completed lines');
  assert.equal(ledger.reduce((n, l) => n + Number(l.micros), 0), done.spentMicros);
  assert.equal(done.spentMicros, lines.reduce((n, l) => n + l.response.body.result.costMicros, 0));
  const [{ inQueue }] = await db.sql`select in_queue as "inQueue" from kiln_private.batches where id = ${id}`;
  assert.equal(inQueue, 0);
  await proc.stop('SIGTERM');
});
