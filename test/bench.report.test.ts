// BENCH.md is rewritten section by section: a run replaces what it measured and keeps the other
// sections and the hand-written notes; every figure is printed with its target.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { BENCH_FILE, mergeSections, renderSection, SECTION_ORDER } from './bench/_report.ts';

const run = { started: '2026-11-24 06:00', machine: 'test machine' };
const load = (rps: number) => ({ rps, p50: 2, p99: 6, non2xx: 0, errors: 0, cpu: { node: 70, postgres: 20, loadGenerator: 30 } });
const foundation = {
  select1: load(12000), models: load(9000), usage: load(6000),
  rounds: { select1: [12000, 11000], models: [9000, 8000], usage: [6000, 5000] },
  modelsRatio: 0.75, usageRatio: 0.61,
};

test('a section renders its figures, date, machine and targets', () => {
  const s = renderSection('foundation', foundation, run);
  assert.match(s, /^<!-- bench:foundation -->\n## /);
  assert.match(s, /<!-- \/bench:foundation -->$/);
  assert.ok(s.includes('Measured 2026-11-24 06:00 UTC on test machine.'));
  assert.ok(s.includes('| `GET /models` | 9,000 | 2 / 6 ms | 70 / 20 / 30 | 0.75 | ≥ 0.8 | **missed** |'), s);
  assert.ok(s.includes('| `GET /usage` | 6,000 | 2 / 6 ms | 70 / 20 / 30 | 0.61 | ≥ 0.6 | met |'), s);
});

test('a partial run replaces its sections and keeps the others and the notes', () => {
  const before = [
    '# Kiln benchmarks', '', 'intro', '',
    '<!-- bench:foundation -->', 'old foundation', '<!-- /bench:foundation -->', '',
    '<!-- bench:images -->', 'old images $1 $&', '<!-- /bench:images -->', '',
    '## Notes', 'kept', '',
  ].join('\n');
  const fresh = renderSection('foundation', foundation, run);
  const after = mergeSections(before, { foundation: fresh, workflows: '<!-- bench:workflows -->\nnew\n<!-- /bench:workflows -->' });
  assert.ok(after.includes(fresh));
  assert.ok(!after.includes('old foundation'));
  assert.ok(after.includes('<!-- bench:images -->\nold images $1 $&\n<!-- /bench:images -->'));
  assert.ok(after.includes('## Notes\nkept'));
  assert.ok(after.trimEnd().endsWith('<!-- bench:workflows -->\nnew\n<!-- /bench:workflows -->'), 'a missing section is appended');
  assert.equal(mergeSections(after, { foundation: fresh }), after, 'rewriting the same figures changes nothing');
});

test('BENCH.md has every section, and the README links it', () => {
  const bench = fs.readFileSync(BENCH_FILE, 'utf8');
  for (const name of SECTION_ORDER) {
    assert.equal(bench.split(`<!-- bench:${name} -->`).length, 2, `one ${name} section`);
    assert.equal(bench.split(`<!-- /bench:${name} -->`).length, 2, `one end of the ${name} section`);
  }
  const readme = fs.readFileSync(path.join(path.dirname(BENCH_FILE), 'README.md'), 'utf8');
  assert.ok(readme.includes('(BENCH.md)'));
});

test('the generations section states the enqueue bypass against add_jobs and the ≥ 10 % decision', () => {
  const figures = (gain: number) => ({
    post: load(3000), get: load(9000), postRatio: 0.4, getRatio: 0.9,
    rounds: { select1BeforeGet: [1], get: [1], select1BeforePost: [1], post: [1] },
    enqueueToProcessing: { n: 300, ratePerSecond: 50, p50: 3, p99: 12, max: 40 },
    enqueueBypass: { bypass: load(3000), addJobs: load(2500), rounds: { bypass: [3000, 3100], addJobs: [2500, 2600] }, gain },
  });
  const kept = renderSection('generations', figures(0.2), run);
  assert.ok(kept.includes('| one insert into graphile-worker\'s jobs table (the bypass) | 3,000 | 2 / 6 ms | 70 / 20 / 30 |'), kept);
  assert.ok(kept.includes('| `graphile_worker.add_jobs` | 2,500 |'), kept);
  assert.ok(kept.includes('Bypass gain (median of paired rounds): +20.0 %; worth naming graphile-worker\'s private table only at ≥ +10.0 %: met.'), kept);
  assert.ok(renderSection('generations', figures(0.04), run).includes('+4.0 %; worth naming graphile-worker\'s private table only at ≥ +10.0 %: **below**.'));
});

test('the scale section leads with the paired drift and shows its spread over the rounds', () => {
  const loads = { select1: load(12000), usage: load(9000), post: load(4000) };
  const scale = {
    scale: 1, rows: { charges: 10_000_000, generations: 1_000_000, accounts: 1001, heavyShare: 0.5 },
    generateSeconds: { total: 150 }, settled: { dirtyMb: 2000, seconds: 1 },
    daily: { p50: 3, p90: 4, n: 50, days: 150 }, ledgerQueryMs: { heavyMonth: [1100], allMonth: [1300] },
    viewQueryMs: { heavyMonth: 1.3, allMonth: 75 }, list: [{ query: '(none)', p50: 2, p90: 4, items: 20 }],
    // Medians of ratios against a drifting select 1 can differ more than the paired drift does.
    ratios: { empty: { usage: 0.81, post: 0.3 }, loaded: { usage: 0.75, post: 0.31 } },
    postBatch: { empty: 10, loaded: 10 },
    drift: { usage: -0.012, post: -0.06 },
    driftRounds: { usage: [0.069, -0.055, -0.012, 0.032, 0.006], post: [-0.112, -0.06, 0.095, -0.03, -0.08] },
    compareRounds: 5, loads: { empty: loads, loaded: loads }, sizes: [],
  };
  const s = renderSection('scale', scale, run);
  assert.ok(s.includes('| `GET /usage` ratio to `select 1`: empty → loaded ledger | -1.2 % (rounds -5.5 % to +6.9 %); ratios 0.81 → 0.75 | within 5 % | met |'), s);
  assert.ok(s.includes('| `POST /generations` ratio to `select 1`: empty → loaded ledger | -6.0 % (rounds -11.2 % to +9.5 %); ratios 0.30 → 0.31 | within 5 % | **missed** |'), s);
});
