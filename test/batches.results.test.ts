// GET /batches/{id}/results of a 50,000-line batch streams with the API process's memory bounded
// (docs/api.md, "Batches"): a spawned `kiln api` answers about 115 MB of JSON Lines while the test
// samples its resident set (/proc/<pid>/status, VmRSS) every few milliseconds; the peak growth
// stays far below the body, and every line arrives once. And a page of results reads its page of
// lines only, even with the statistics of a batch just made.
//
// The batch is a fixture: kiln.create_batch makes its 50,000 lines (as POST /batches does once
// they are validated), then one SQL update ends them all as completed code generations with 2,000
// characters of code each, and the batch as completed. No worker runs.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { before, test } from 'node:test';
import { spawnKiln, type Spawned } from './_live.ts';
import { createAccount, createKey, createTestDb, type TestDb } from './_setup.ts';

const LINES = 50_000;
const CODE_CHARS = 2000;
/**
 * What the API's RSS may grow by. The heap cap below is the real guard — a stream that kept its
 * lines (113 MB of text, and their objects) would run out of heap — while RSS also counts external
 * buffers freed lazily: +39–46 MB on Node 20, +99 MB on Node 24 for this body.
 */
const LIMIT_MB = 120;
/**
 * The API's old generation is capped (a container-sized heap). With Node's default limit (4 GB on
 * a machine with 24 GB) V8 lets garbage pile up to its first old-generation limit, about 140 MB,
 * before a full collection: the RSS peak then shows V8's heuristic, not what the stream keeps
 * (measured: +100 MB for this 113 MB body, all of it reclaimed by the first mark-compact). Under
 * the cap a stream that kept its lines would run out of heap or grow past the limit.
 */
const OLD_SPACE_MB = 128;

let db: TestDb;
let apiProc: Spawned;

before(async () => {
  db = await createTestDb();
  apiProc = await spawnKiln('api', db.url, { NODE_OPTIONS: `--max-old-space-size=${OLD_SPACE_MB}` });
});

/** A completed batch of `n` lines of the account, made in SQL (see the top of the file). */
async function endedBatch(accountId: string, n: number): Promise<string> {
  const [{ r }] = await db.sql`
    select kiln.create_batch(${accountId}::uuid, null, null, 'api',
      array(select 'line-' || i from generate_series(1, ${n}::int) i),
      array(select 'code' from generate_series(1, ${n}::int)),
      array(select 'local/fixture' from generate_series(1, ${n}::int)),
      array(select jsonb_build_object('type', 'code', 'prompt', 'results line ' || i) from generate_series(1, ${n}::int) i),
      array(select 100::bigint from generate_series(1, ${n}::int)),
      3) as r`;
  const id = r.batch.id as string;
  await db.sql.begin(async (tx) => {
    // Counted below at once, as a cancel counts its lines.
    await tx`select set_config('kiln.batch_bulk', 'on', true)`;
    await tx`update kiln_private.generations
      set status = 'completed', started_at = now(), finished_at = now(), updated_at = now(), cost_micros = 7,
          result = jsonb_build_object('type', 'code', 'code', repeat('x', ${CODE_CHARS}::int) || batch_line, 'structuredOutput', null)
      where batch_id = ${id}`;
    await tx`update kiln_private.batches set completed = total, next_line = total, in_queue = 0, spent_micros = 7 * total,
      started_at = now(), status = 'completed', completed_at = now() where id = ${id}`;
  });
  await db.sql`delete from graphile_worker._private_jobs`;
  return id;
}

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

/** Reads the results, one JSON line at a time, as a client that parses as it goes. */
async function readResults(key: string, id: string, seen: Set<string>): Promise<{ bytes: number; lines: number }> {
  const res = await fetch(`${apiProc.base}/batches/${id}/results`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(res.status, 200, res.status === 200 ? '' : await res.text());
  const decoder = new TextDecoder();
  let buf = '';
  let bytes = 0;
  let lines = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.byteLength;
    buf += decoder.decode(chunk, { stream: true });
    let cut: number;
    while ((cut = buf.indexOf('\n')) >= 0) {
      const line = JSON.parse(buf.slice(0, cut));
      buf = buf.slice(cut + 1);
      lines++;
      assert.equal(line.response?.status_code, 200);
      assert.ok(!seen.has(line.custom_id), `${line.custom_id} twice`);
      seen.add(line.custom_id);
    }
  }
  assert.equal(buf, '');
  return { bytes, lines };
}

test(`the results of a ${LINES.toLocaleString('en')}-line batch stream with the API's memory bounded`, async (t) => {
  const a = await createAccount(db.sql, { tier: 'pro' });
  const key = (await createKey(db.sql, a.id)).key;
  const small = await endedBatch(a.id, 20);
  const big = await endedBatch(a.id, LINES);
  // Warm the route (code loaded, pools open), then the baseline.
  assert.equal((await readResults(key, small, new Set())).lines, 20);
  const pid = apiProc.child.pid!;
  const baseline = rssBytes(pid);
  let peak = baseline;
  const sampler = setInterval(() => { peak = Math.max(peak, rssBytes(pid)); }, 5);
  const started = performance.now();
  const seen = new Set<string>();
  let got: { bytes: number; lines: number };
  try {
    got = await readResults(key, big, seen);
  } finally {
    clearInterval(sampler);
  }
  peak = Math.max(peak, rssBytes(pid));
  const growthMb = (peak - baseline) / 2 ** 20;
  const bodyMb = got.bytes / 2 ** 20;
  t.diagnostic(`${got.lines} lines, ${bodyMb.toFixed(1)} MB in ${((performance.now() - started) / 1000).toFixed(1)} s; API RSS ${(baseline / 2 ** 20).toFixed(0)} MB before, peak growth ${growthMb.toFixed(1)} MB`);
  assert.equal(got.lines, LINES);
  assert.equal(seen.size, LINES);
  for (const n of [1, 2, 25_000, LINES]) assert.ok(seen.has(`line-${n}`), `line-${n}`);
  assert.ok(bodyMb > 100, `the body is large enough to tell (${bodyMb.toFixed(1)} MB)`);
  assert.ok(growthMb < LIMIT_MB, `peak RSS growth ${growthMb.toFixed(1)} MB < ${LIMIT_MB} MB (body ${bodyMb.toFixed(1)} MB)`);
});

test('a page of results reads its lines only, even with the statistics of a batch just made', async () => {
  const a = await createAccount(db.sql, { tier: 'pro' });
  const id = await endedBatch(a.id, 20_000);
  // Rows the call fetched from the generations table, counted in its own transaction. With a
  // LIMIT and no statistics for the new lines, Postgres planned it as a sort of every line left
  // (20,000 rows for each page of 100).
  const fetched = await db.sql.begin(async (tx) => {
    const count = async () => Number((await tx`select coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0) as n
      from pg_stat_xact_user_tables where relid = 'kiln_private.generations'::regclass`)[0]!.n);
    const before = await count();
    const rows = await tx`select line from kiln.batch_results(${a.id}::uuid, ${id}::uuid, 100, 100)`;
    assert.deepEqual([rows.length, rows[0]!.line, rows.at(-1)!.line], [100, 101, 200]);
    return (await count()) - before;
  });
  assert.ok(fetched <= 200, `a page of 100 fetched ${fetched} rows`);
});
