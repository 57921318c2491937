// BENCH.md's `node` section (npm run bench:node): one run per Node version, figures side by side,
// each row with its target; a section one run did not measure says so instead of a number.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergeSections, SECTION_ORDER } from './bench/_report.ts';
import { renderVersions, type VersionRun } from './bench/_versions.ts';

const load = (rps: number) => ({ rps, p50: 2, p99: 6, non2xx: 0, errors: 0, cpu: { node: 70, postgres: 20, loadGenerator: 30 } });
const foundation = (models: number, usage: number) => ({ select1: load(12000), models: load(9000), usage: load(6000), rounds: {}, modelsRatio: models, usageRatio: usage });
const run = (version: string, results: VersionRun['results']): VersionRun => ({
  version, started: '2026-11-24 23:30', seconds: 412.4, cores: 2, loadBefore: [3.5, 4, 2.25], loadAfter: [5, 4.5, 3], results,
});

test('the same rows for each Node version, side by side, with targets and the load averages', () => {
  const wait = { waitLatency: { p50: 1.07, p99: 12.69 }, streamLatency: { p50: 0.62, p99: 14.52 }, rssPerWaiterKb: 14.5, rssPerStreamKb: 6.4, heapPerWaiterKb: 12.2, heapPerStreamKb: 19.2 };
  const s = renderVersions([
    run('v20.20.2', { foundation: foundation(0.89, 0.82), wait }),
    run('v24.21.0', { foundation: foundation(0.91, 0.7) }),
  ]);
  assert.match(s, /^<!-- bench:node -->\n## /);
  assert.match(s, /<!-- \/bench:node -->$/);
  assert.ok(s.includes('| section | figure | target | Node v20.20.2 | Node v24.21.0 |'), s);
  assert.ok(s.includes('| foundation | `GET /models` ratio to `select 1` | ≥ 0.8 | 0.89 | 0.91 |'), s);
  assert.ok(s.includes('| foundation | `GET /usage` ratio to `select 1` | ≥ 0.6 | 0.82 | 0.70 |'), s);
  assert.ok(s.includes('| wait | settlement → waiting response, p50 / p99 | ≤ 5 / 20 ms | 1.07 / 12.69 ms | not run |'), s);
  assert.ok(s.includes('- Node v24.21.0: started 2026-11-24 23:30 UTC, 412 s; load average (1 / 5 / 15 min) 3.50 / 4.00 / 2.25 at start, 5.00 / 4.50 / 3.00 at the end.'), s);
  assert.ok(!s.includes('| generations |'), 'a section neither run measured has no rows');
  const unmeasured = SECTION_ORDER.filter((name) => name !== 'foundation' && name !== 'wait').join(', ');
  assert.ok(s.includes(`Not measured in these runs (\`KILN_BENCH_ONLY\`): ${unmeasured}.`), s);
  assert.ok(s.includes('| foundation | server CPU µs per request: `select 1` / `GET /models` / `GET /usage` | — | 70 / 70 / 70 | 70 / 70 / 70 |'), s);
  assert.ok(s.includes('**The machine was loaded** (1-minute load average up to 5.00 on 2 cores)'), s);
  const quiet = renderVersions([{ ...run('v20.20.2', {}), loadBefore: [0.5, 0.5, 0.5], loadAfter: [1.5, 1, 1] }]);
  assert.ok(!quiet.includes('was loaded'), quiet);
});

test('the section is replaced on the next run; the others and the notes stay', () => {
  const before = ['# Kiln benchmarks', '', '<!-- bench:foundation -->', 'npm run bench figures', '<!-- /bench:foundation -->', '', '## Notes', 'kept'].join('\n');
  const first = mergeSections(before, { node: renderVersions([run('v20.20.2', { foundation: foundation(0.8, 0.6) })]) });
  const second = mergeSections(first, { node: renderVersions([run('v20.20.2', { foundation: foundation(0.85, 0.65) })]) });
  assert.ok(second.includes('npm run bench figures') && second.includes('## Notes\nkept'));
  assert.equal(second.split('<!-- bench:node -->').length, 2);
  assert.ok(second.includes('| 0.85 |') && !second.includes('| 0.80 |'));
});
