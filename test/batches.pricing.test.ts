// Batch pricing and batch spend apart (docs/providers.md "Model catalog", docs/usage.md, docs/analysts.md):
// a catalog entry's batchMarkup bills batch lines — their reservation and their settled charge,
// and their fallbacks' — while the same request sent interactively bills at markup; GET /models
// shows the batch price; GET /usage/daily, kiln.daily_spend and kiln.daily_generations split
// batch spend from the rest, the parts adding up exactly; kiln.batches for an analyst; and the
// entry's validation (kiln model upsert, kiln.upsert_model).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { before, test } from 'node:test';
import postgres from 'postgres';
import { invalidateCatalog } from '../src/billing/catalog.ts';
import { modelEntryJson, resolveEntry } from '../src/cli/model-entry.ts';
import type { ModelRow } from '../src/db/sql/upsert_model.ts';
import { startTestWorker, until } from './_generations.ts';
import { api, createAccount, createKey, onCleanup, startServer, type TestServer } from './_setup.ts';

let srv: TestServer;

const ROOT = path.resolve(import.meta.dirname, '..');
/** An example query of db/examples/analyst.sql by its `-- name:`. */
function example(name: string): string {
  const text = fs.readFileSync(path.join(ROOT, 'db', 'examples', 'analyst.sql'), 'utf8');
  const chunk = text.split(/^-- name: /m).find((c) => c.startsWith(`${name}\n`));
  assert.ok(chunk, name);
  return chunk.slice(chunk.indexOf('\n') + 1);
}

const MODELS = [
  // An image entry with a dearer fallback: both have a batch price.
  { id: 'bp/sketch', name: 'Sketch', category: 'image', provider: 'local', supports_image_input: true,
    cost: { micros_per_image: 1000 }, markup: 2, batchMarkup: 1.5, fallbacks: ['bp/sketch-b'] },
  { id: 'bp/sketch-b', name: 'Sketch B', category: 'image', provider: 'local', supports_image_input: true,
    cost: { micros_per_image: 3000 }, markup: 2, batchMarkup: 1.25 },
  // Per token: a batch line costs exactly a third of the same request sent interactively.
  { id: 'bp/coder', name: 'Coder', category: 'text', provider: 'local',
    cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 100, markup: 3, batchMarkup: 1 },
  // No batch price: batch lines bill at markup.
  { id: 'bp/plain', name: 'Plain', category: 'image', provider: 'local', cost: { micros_per_image: 1000 }, markup: 2 },
  // Slow enough to read its reservations in flight.
  { id: 'bp/slow', name: 'Slow', category: 'text', provider: 'local', upstream: { delayMs: 2500, stream: false },
    cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 100, markup: 2, batchMarkup: 1 },
];

before(async () => {
  srv = await startServer();
  for (const m of MODELS) await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json(m)})`;
  invalidateCatalog(srv.ctx);
  await startTestWorker(srv);
});

async function account() {
  const a = await createAccount(srv.db.sql, { tier: 'pro', budgetMicros: 100_000_000 });
  return { id: a.id, key: (await createKey(srv.db.sql, a.id)).key };
}

const line = (custom_id: string, body: Record<string, unknown>) => JSON.stringify({ custom_id, method: 'POST', url: '/api/v1/generations', body });

async function postBatch(key: string, lines: string[]) {
  const res = await fetch(`${srv.base}/batches`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/jsonl' }, body: lines.join('\n') + '\n',
  });
  const body = await res.json();
  assert.equal(res.status, 202, JSON.stringify(body));
  return body as { id: string };
}

async function ended(key: string, id: string) {
  return until('the batch ended', async () => {
    const b = (await api(srv.base, key, `/batches/${id}`)).body;
    return ['completed', 'canceled', 'expired'].includes(b.status) ? b : null;
  }, 60_000, 100);
}

async function interactive(key: string, body: Record<string, unknown>) {
  const res = await api(srv.base, key, '/generations', { body, headers: { prefer: 'wait=30' } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.status, 'completed');
  return res.body as { id: string; result: { costMicros: number } };
}

/** Each line's charge and stored request (its catalog entries as the worker reads them), by custom_id. */
async function lines(batchId: string) {
  const rows = await srv.db.sql`
    select g.custom_id, g.model_id, g.cost_micros::int as cost, c.reserved_micros::int as reserved, c.settled_micros::int as settled,
           c.status, c.batch_id, (r.r->'model'->>'markup')::float8 as markup,
           array(select (f->>'markup')::float8 from jsonb_array_elements(coalesce(r.r->'fallbacks', '[]')) f) as fallback_markups
    from kiln_private.generations g join kiln_private.charges c on c.id = g.charge_id
    join kiln_private.batches b on b.id = g.batch_id
    cross join lateral (select kiln_private.batch_line_request(g.request, b.models) as r) r
    where g.batch_id = ${batchId}`;
  return new Map(rows.map((r) => [r.custom_id as string, r]));
}

async function chargeOf(generationId: string) {
  const [c] = await srv.db.sql`select reserved_micros::int as reserved, settled_micros::int as settled, batch_id from kiln_private.charges where generation_id = ${generationId}`;
  return c!;
}

test('GET /models shows the batch price next to the price, only for entries that set one', async () => {
  const { key } = await account();
  const res = await api(srv.base, key, '/models');
  assert.equal(res.status, 200);
  const byId = new Map(res.body.data.map((m: { id: string }) => [m.id, m]));
  const sketch = byId.get('bp/sketch') as any;
  assert.deepEqual(sketch.pricing, { micros_per_image: 2000 });
  assert.deepEqual(sketch.batchPrice, { micros_per_image: 1500 });
  assert.deepEqual((byId.get('bp/coder') as any).batchPrice, { input_micros_per_token: 1, output_micros_per_token: 1 });
  assert.ok(!('batchPrice' in (byId.get('bp/plain') as any)), 'absent when the entry has no batch price');
  assert.ok(!('batchPrice' in (byId.get('local/sketch') as any)));
});

test('a batch line reserves and settles at batchMarkup (its fallbacks too); the same request interactively at markup', async () => {
  const { key } = await account();
  const img = { type: 'image', prompt: 'a lighthouse', model: 'bp/sketch' };
  const code = { type: 'code', prompt: 'a pricing table', targetLanguage: 'tsx', model: 'bp/coder' };
  const plain = { type: 'image', prompt: 'a lighthouse', model: 'bp/plain' };

  const iImg = await interactive(key, img);
  const iCode = await interactive(key, code);
  const iPlain = await interactive(key, plain);
  // Interactive: markup 2 and 3; the image reserves the dearest of its chain (3000 × 2).
  assert.deepEqual({ ...await chargeOf(iImg.id) }, { reserved: 6000, settled: 2000, batch_id: null });
  assert.equal(iImg.result.costMicros, 2000);
  assert.deepEqual({ ...await chargeOf(iPlain.id) }, { reserved: 2000, settled: 2000, batch_id: null });
  const iCodeCharge = await chargeOf(iCode.id);
  assert.equal(iCodeCharge.batch_id, null);
  assert.equal(iCodeCharge.reserved % 3, 0, 'per-token prices × 3 are whole multiples of 3');

  const batch = await postBatch(key, [line('img', img), line('code', code), line('plain', plain)]);
  const done = await ended(key, batch.id);
  assert.deepEqual(done.requestCounts, { total: 3, completed: 3, failed: 0, canceled: 0 });
  const got = await lines(batch.id);
  const bImg = got.get('img')!;
  // The stored request carries the entries at their batch markup: what the worker prices with.
  assert.equal(bImg.markup, 1.5);
  assert.deepEqual(bImg.fallback_markups, [1.25]);
  // Reserved when the line started, at the batch price over the chain: max(1000 × 1.5, 3000 × 1.25).
  assert.equal(bImg.reserved, 3750);
  assert.equal(bImg.settled, 1500);
  assert.equal(bImg.cost, 1500);
  assert.equal(bImg.batch_id, batch.id, 'the charge names its batch');
  const bCode = got.get('code')!;
  assert.equal(bCode.markup, 1);
  assert.equal(bCode.reserved * 3, iCodeCharge.reserved, 'reservation: batchMarkup 1 against markup 3');
  assert.equal(bCode.settled * 3, iCode.result.costMicros, 'settlement: batchMarkup 1 against markup 3');
  assert.ok(bCode.settled > 0);
  const bPlain = got.get('plain')!;
  assert.equal(bPlain.markup, 2, 'no batch price: the markup');
  assert.deepEqual([bPlain.reserved, bPlain.settled], [2000, 2000]);
  assert.ok([...got.values()].every((l) => l.status === 'settled' && l.batch_id === batch.id));
  assert.equal(done.spentMicros, 1500 + bCode.settled + 2000);
});

test('GET /usage/daily, kiln.daily_spend and kiln.daily_generations show batch spend apart; the parts add up exactly, reservations in flight included', async () => {
  const { id: accountId, key } = await account();
  const img = { type: 'image', prompt: 'a harbour', model: 'bp/sketch' };
  await interactive(key, img);
  await interactive(key, img);
  const done = await postBatch(key, [line('a', img), line('b', img), line('c', { type: 'code', prompt: 'a form', model: 'bp/coder' })]);
  await ended(key, done.id);
  // In flight at once: a batch line and an interactive request of the same slow model.
  const slow = { type: 'code', prompt: 'a slow one', model: 'bp/slow' };
  const running = await postBatch(key, [line('slow', slow)]);
  const posted = await api(srv.base, key, '/generations', { body: slow });
  assert.equal(posted.status, 202);
  const [bHeld, iHeld] = await until('both reservations are open', async () => {
    const rows = await srv.db.sql`select (batch_id is not null) as batch, reserved_micros::int as r from kiln_private.charges
      where account_id = ${accountId} and model_id = 'bp/slow' and status = 'reserved'`;
    const b = rows.find((r) => r.batch);
    const i = rows.find((r) => !r.batch);
    return b && i ? [b.r as number, i.r as number] : null;
  });
  assert.equal(iHeld, bHeld * 2, 'the interactive one at markup 2, the batch line at 1');

  const daily = await api(srv.base, key, '/usage/daily');
  assert.equal(daily.status, 200, JSON.stringify(daily.body));
  const days = daily.body.days as any[];
  for (const d of days) {
    for (const f of ['spend_micros', 'charges', 'held_micros']) {
      assert.equal(d.batch[f] + d.interactive[f], d[f], `${d.model_id} ${f}: batch + interactive = total`);
    }
  }
  const of = (model: string) => days.find((d) => d.model_id === model);
  assert.deepEqual({ ...of('bp/sketch') }, {
    day: of('bp/sketch').day, model_id: 'bp/sketch', spend_micros: 7000, charges: 4, held_micros: 0,
    batch: { spend_micros: 3000, charges: 2, held_micros: 0 }, interactive: { spend_micros: 4000, charges: 2, held_micros: 0 },
  });
  const s = of('bp/slow');
  assert.deepEqual([s.batch.held_micros, s.interactive.held_micros, s.batch.charges, s.interactive.charges], [bHeld, iHeld, 1, 1]);
  assert.equal(of('bp/coder').interactive.spend_micros, 0);
  assert.ok(of('bp/coder').batch.spend_micros > 0);
  const sum = (f: (d: any) => number) => days.reduce((n, d) => n + f(d), 0);
  assert.equal(sum((d) => d.spend_micros), (await api(srv.base, key, '/usage')).body.used_micros, 'the days still add up to used_micros');
  const [ledger] = await srv.db.sql`
    select coalesce(sum(coalesce(settled_micros, reserved_micros)) filter (where batch_id is not null and status <> 'released'), 0)::int as batch,
           coalesce(sum(coalesce(settled_micros, reserved_micros)) filter (where batch_id is null and status <> 'released'), 0)::int as other
    from kiln_private.charges where account_id = ${accountId}`;
  assert.equal(sum((d) => d.batch.spend_micros), ledger!.batch);
  assert.equal(sum((d) => d.interactive.spend_micros), ledger!.other);

  // kiln.daily_spend: the batch_* columns are the ledger's batch part, and never more than the totals.
  const view = await srv.db.sql`
    select model_id, origin, key_id, charges::int, spend_micros::int, held_micros::int, settled_charges::int, released_charges::int, open_reservations::int,
           batch_charges::int, batch_spend_micros::int, batch_held_micros::int, batch_settled_charges::int,
           batch_released_charges::int, batch_open_reservations::int
    from kiln.daily_spend where account_id = ${accountId} order by 1, 2, 3`;
  const fromLedger = await srv.db.sql`
    select model_id, origin, key_id, count(*)::int as charges, coalesce(sum(settled_micros), 0)::int as spend_micros,
           coalesce(sum(reserved_micros) filter (where status = 'reserved'), 0)::int as held_micros,
           (count(*) filter (where status = 'settled'))::int as settled_charges,
           (count(*) filter (where status = 'released'))::int as released_charges,
           (count(*) filter (where status = 'reserved'))::int as open_reservations,
           (count(*) filter (where batch_id is not null))::int as batch_charges,
           coalesce(sum(settled_micros) filter (where batch_id is not null), 0)::int as batch_spend_micros,
           coalesce(sum(reserved_micros) filter (where batch_id is not null and status = 'reserved'), 0)::int as batch_held_micros,
           (count(*) filter (where batch_id is not null and status = 'settled'))::int as batch_settled_charges,
           (count(*) filter (where batch_id is not null and status = 'released'))::int as batch_released_charges,
           (count(*) filter (where batch_id is not null and status = 'reserved'))::int as batch_open_reservations
    from kiln_private.charges where account_id = ${accountId} group by 1, 2, 3 order by 1, 2, 3`;
  assert.deepEqual([...view], [...fromLedger]);
  assert.ok(view.some((r) => r.batch_spend_micros > 0 && r.spend_micros > r.batch_spend_micros), 'a group with both lanes');
  // docs/usage.md's check of the view against the ledger finds no difference.
  const usageDoc = fs.readFileSync(path.join(ROOT, 'docs', 'usage.md'), 'utf8');
  const check = /```sql\n(select \* from kiln\.daily_spend\nexcept[\s\S]*?);[^\n]*\n```/.exec(usageDoc);
  assert.ok(check, 'the check is in docs/usage.md');
  assert.deepEqual([...await srv.db.sql.unsafe(check[1]!)], []);
  // The example batch-share: batch and interactive spend of the day add up to the day's.
  const share = await srv.db.sql.unsafe(example('batch-share'));
  const [tot] = await srv.db.sql`select coalesce(sum(settled_micros), 0)::int as spend, coalesce(sum(settled_micros) filter (where batch_id is not null), 0)::int as batch
    from kiln_private.charges where created_at >= current_date - 30`;
  assert.equal(share.reduce((n, r) => n + Math.round(Number(r.batch_usd) * 1e6), 0), tot!.batch);
  assert.equal(share.reduce((n, r) => n + Math.round((Number(r.batch_usd) + Number(r.interactive_usd)) * 1e6), 0), tot!.spend);

  // Both finish; the rollup the triggers kept equals one rebuilt from the whole ledger.
  await ended(key, running.id);
  await until('the interactive one settled', async () => (await api(srv.base, key, `/generations/${posted.body.id}`)).body.status === 'completed');
  const rollup = () => srv.db.sql`
    select pool_id, day::text, model_id, origin, key_id, charges::int, settled_charges::int, released_charges::int, spend_micros::int,
           batch_charges::int, batch_settled_charges::int, batch_released_charges::int, batch_spend_micros::int
    from kiln_private.charge_days where account_id = ${accountId} order by 1, 2, 3, 4, 5`;
  const kept = await rollup();
  assert.ok(kept.some((r) => r.batch_spend_micros > 0));
  await srv.db.sql`select kiln_private.rebuild_charge_days()`;
  assert.deepEqual([...await rollup()], [...kept]);

  // kiln.daily_generations: how many of a group were batch lines and what they cost.
  const [g] = await srv.db.sql`select sum(generations)::int as n, sum(batch_generations)::int as b, sum(cost_micros)::int as cost, sum(batch_cost_micros)::int as bcost
    from kiln.daily_generations where account_id = ${accountId} and model_id = 'bp/sketch'`;
  assert.deepEqual({ ...g }, { n: 4, b: 2, cost: 7000, bcost: 3000 });
});

test('an analyst reads kiln.batches: one row per batch with counts, times and spend from the ledger', async () => {
  const { id: accountId, key } = await account();
  const b = await postBatch(key, [
    line('x', { type: 'image', prompt: 'one', model: 'bp/sketch' }),
    line('y', { type: 'image', prompt: 'two', model: 'bp/plain' }),
  ]);
  const done = await ended(key, b.id);
  const canceledBatch = await postBatch(key, Array.from({ length: 30 }, (_, i) => line(`s${i}`, { type: 'code', prompt: `slow ${i}`, model: 'bp/slow' })));
  const cancel = await api(srv.base, key, `/batches/${canceledBatch.id}/cancel`, { method: 'POST' });
  assert.ok(cancel.status === 200 || cancel.status === 202, JSON.stringify(cancel.body));
  await ended(key, canceledBatch.id);

  const name = `analyst_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const password = Math.random().toString(36).slice(2);
  await srv.db.sql.unsafe(`create role ${name} login password '${password}'`);
  await srv.db.sql.unsafe(`grant kiln_analyst to ${name}`);
  const u = new URL(srv.db.url);
  u.username = name;
  u.password = password;
  const analyst = postgres(u.toString(), { max: 1, onnotice: () => {} });
  onCleanup(async () => {
    await analyst.end({ timeout: 1 });
    await srv.db.sql.unsafe(`drop owned by ${name}`).catch(() => {});
    await srv.db.sql.unsafe(`drop role if exists ${name}`);
  });

  const rows = await analyst`select * from kiln.batches where account_id = ${accountId} order by created_at`;
  assert.equal(rows.length, 2);
  const [first, second] = rows;
  assert.deepEqual({
    id: first.id, workspace_id: first.workspace_id, status: first.status, total: first.total, completed: first.completed,
    failed: first.failed, canceled: first.canceled, unfinished: first.unfinished, spend_micros: Number(first.spend_micros),
    held_micros: Number(first.held_micros), charges: Number(first.charges), settled_charges: Number(first.settled_charges),
  }, {
    id: b.id, workspace_id: null, status: 'completed', total: 2, completed: 2, failed: 0, canceled: 0, unfinished: 0,
    spend_micros: 1500 + 2000, held_micros: 0, charges: 2, settled_charges: 2,
  });
  assert.equal(Number(first.spend_micros), done.spentMicros);
  assert.equal(first.created_at.toISOString(), done.createdAt);
  assert.equal(first.started_at.toISOString(), done.startedAt);
  assert.equal(first.completed_at.toISOString(), done.completedAt);
  assert.equal(first.expires_at.toISOString(), done.expiresAt);
  assert.ok(first.key_id);
  // The canceled batch: its spend is exactly what its started lines settled; lines never started have no charge.
  assert.equal(second.id, canceledBatch.id);
  assert.equal(second.status, 'canceled');
  assert.equal(second.total, 30);
  assert.ok(second.canceled > 0);
  assert.equal(second.completed + second.failed + second.canceled, 30);
  const [ledger] = await srv.db.sql`select count(*)::int as n, coalesce(sum(settled_micros), 0)::int as spend from kiln_private.charges where batch_id = ${canceledBatch.id}`;
  assert.equal(Number(second.charges), ledger!.n);
  assert.ok(ledger!.n < 30, 'lines never started reserved nothing');
  assert.equal(Number(second.spend_micros), ledger!.spend);
  // The example batches-this-week, as the analyst runs it.
  const week = await analyst.unsafe(example('batches-this-week'));
  const listed = week.find((r) => r.id === b.id);
  assert.equal(Number(listed?.spend_usd), 3500 / 1e6);
  assert.equal(listed?.status, 'completed');
  // Only the view: not the tables behind it.
  await assert.rejects(analyst`select * from kiln_private.batches limit 1`, (e: any) => e.code === '42501');
});

test('batchMarkup in a catalog entry: at least 1, at most markup (KILN_DEFAULT_MARKUP when the entry sets none), kept across upserts', async () => {
  const base = { id: 'bp/entry', name: 'Entry', category: 'image', provider: 'local', cost: { micros_per_image: 10 } };
  const problems = (file: unknown, stored: ModelRow | null = null, defaultMarkup = 1.25) => {
    const r = resolveEntry(file, stored, defaultMarkup);
    return r.ok ? [] : r.problems;
  };
  assert.deepEqual(problems({ ...base, markup: 2, batchMarkup: 1.5 }), []);
  assert.deepEqual(problems({ ...base, markup: 2, batchMarkup: 2 }), []);
  assert.deepEqual(problems({ ...base, markup: 2, batchMarkup: null }), []);
  assert.match(problems({ ...base, markup: 2, batchMarkup: 0.5 }).join('\n'), /^batchMarkup: /);
  assert.match(problems({ ...base, markup: 2, batchMarkup: 'cheap' }).join('\n'), /^batchMarkup: /);
  assert.match(problems({ ...base, markup: 2, batchMarkup: 2.5 }).join('\n'), /batchMarkup: must not be above markup/);
  assert.match(problems({ ...base, batchMarkup: 1.5 }).join('\n'), /batchMarkup: must not be above markup \(the entry sets none, so KILN_DEFAULT_MARKUP, 1\.25\)/);
  assert.deepEqual(problems({ ...base, batchMarkup: 1.5 }, null, 2), []);
  assert.match(problems({ ...base, batch_markup: 1.5 }).join('\n'), /batch_markup: unknown key \(the key is batchMarkup\)/);

  // Stored, listed in the file format, and kept when a later file leaves it out.
  const ok = resolveEntry({ ...base, markup: 2, batchMarkup: 1.5 }, null, 1.25);
  assert.ok(ok.ok);
  const [stored] = await srv.db.sql<ModelRow[]>`select * from kiln.upsert_model(${srv.db.sql.json(ok.entry as any)})`;
  assert.equal(Number(stored!.batch_markup), 1.5);
  assert.equal(modelEntryJson(stored!).batchMarkup, 1.5);
  const kept = resolveEntry({ id: 'bp/entry', name: 'Renamed' }, stored!, 1.25);
  assert.ok(kept.ok && kept.entry.batchMarkup === 1.5);
  // A markup lowered below the stored batch price is refused, naming the field.
  assert.match(problems({ id: 'bp/entry', markup: 1.2 }, stored!).join('\n'), /batchMarkup: must not be above markup/);

  // The database holds the same rule (a bad entry that bypasses the CLI is KI001).
  for (const bad of [{ ...base, markup: 2, batchMarkup: 3 }, { ...base, markup: 2, batchMarkup: 0.9 }]) {
    await assert.rejects(srv.db.sql`select kiln.upsert_model(${srv.db.sql.json(bad)})`, (e: any) => e.code === 'KI001' && /models_batch_markup_check/.test(e.message));
  }
});
