// The console's split chart without a browser (src/console/app/usage-split.ts; docs/console.md,
// "Splitting the chart"): the stacks of each day add up exactly to the day's total, the top groups
// keep one series across days, the null group is its own stack, the rest is "others"; pages are read
// up to the cap, whose rest lands in "others"; a key the API would refuse is told, not sent.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keyProblem, noneLabel, otherGroupCount, readSplit, splitOf, splitSeries, type GroupRow } from '../src/console/app/usage-split.ts';

const days = ['2026-11-01', '2026-11-02', '2026-11-03'];

/** Per day, the sum of every series' stack. */
const stacked = (series: ReturnType<typeof splitSeries>) => days.map((_, i) => series.reduce((s, x) => s + x.perDay[i]!, 0));

test('the top groups, others and the null group; each day adds up to its total', () => {
  // Day totals arrive per model: two rows on day 1.
  const dayRows = [
    { day: '2026-11-01', spend_micros: 7000 }, { day: '2026-11-01', spend_micros: 600 },
    { day: '2026-11-02', spend_micros: 5000 },
  ];
  const groups: GroupRow[] = [
    { day: '2026-11-01', group: 'a', spend_micros: 4000 }, { day: '2026-11-01', group: 'b', spend_micros: 2000 },
    { day: '2026-11-01', group: 'c', spend_micros: 1000 }, { day: '2026-11-01', group: null, spend_micros: 600 },
    { day: '2026-11-02', group: 'b', spend_micros: 3000 }, { day: '2026-11-02', group: 'd', spend_micros: 1500 },
    { day: '2026-11-02', group: 'c', spend_micros: 500 },
  ];
  const s = splitSeries(days, { days: dayRows, groups }, 'no end user', 2);
  // b (5000) before a (4000); c and d are others.
  assert.deepEqual(s.map((x) => [x.key, x.perDay]), [
    ['group:b', [2000, 3000, 0]],
    ['group:a', [4000, 0, 0]],
    ['others', [1000, 2000, 0]],
    ['none', [600, 0, 0]],
  ]);
  assert.deepEqual(stacked(s), [7600, 5000, 0]);
  assert.equal(s.find((x) => x.kind === 'none')!.label, 'no end user');
  assert.equal(otherGroupCount({ groups }, 2), 2);
  // With room for every group there is no "others".
  const all = splitSeries(days, { days: dayRows, groups }, 'none', 8);
  assert.deepEqual(all.map((x) => x.key), ['group:b', 'group:a', 'group:c', 'group:d', 'none']);
  assert.deepEqual(stacked(all), [7600, 5000, 0]);
});

test('groups not read (past the cap) are in others, so the day still adds up', () => {
  const dayRows = [{ day: '2026-11-01', spend_micros: 900 }, { day: '2026-11-03', spend_micros: 300 }];
  // Only day 1's first group was read.
  const s = splitSeries(days, { days: dayRows, groups: [{ day: '2026-11-01', group: 'a', spend_micros: 500 }] }, 'no project');
  assert.deepEqual(s.map((x) => [x.key, x.perDay]), [['group:a', [500, 0, 0]], ['others', [400, 0, 300]]]);
  assert.deepEqual(stacked(s), [900, 0, 300]);
  // Ties by name; a group of no spend has no stack.
  const tie = splitSeries(days, { days: [{ day: '2026-11-02', spend_micros: 20 }], groups: [
    { day: '2026-11-02', group: 'z', spend_micros: 10 }, { day: '2026-11-02', group: 'y', spend_micros: 10 }, { day: '2026-11-02', group: 'x', spend_micros: 0 },
  ] }, 'none');
  assert.deepEqual(tie.map((x) => x.key), ['group:y', 'group:z']);
});

test('readSplit follows next_cursor up to the cap and says when it stopped short', async () => {
  const asked: Array<Record<string, unknown>> = [];
  const pages = [1, 2, 3, 4].map((n) => ({
    days: [{ day: '2026-11-01', spend_micros: 100 * n }],
    groups: [{ day: '2026-11-01', group: `g${n}`, spend_micros: n }],
    next_cursor: n < 4 ? `c${n}` : null,
  }));
  const client = {
    usage: {
      daily: async (q: Record<string, unknown>) => {
        asked.push(q);
        return pages[asked.length - 1]!;
      },
    },
  } as never;
  const capped = await readSplit(client, { from: '2026-11-01', to: '2026-11-30', groupBy: 'metadata.project' }, undefined, 2, 3);
  assert.deepEqual(asked.map((q) => [q.cursor, q.limit, q.groupBy, q.from, q.to]), [
    [undefined, 2, 'metadata.project', '2026-11-01', '2026-11-30'], ['c1', 2, 'metadata.project', '2026-11-01', '2026-11-30'], ['c2', 2, 'metadata.project', '2026-11-01', '2026-11-30'],
  ]);
  assert.deepEqual(capped.groups.map((g) => g.group), ['g1', 'g2', 'g3']);
  assert.equal(capped.pages, 3);
  assert.equal(capped.truncated, true);
  assert.deepEqual(capped.days, pages[0]!.days, 'the first page\'s days');
  asked.length = 0;
  const whole = await readSplit(client, { from: '2026-11-01', to: '2026-11-30', groupBy: 'endUser' }, undefined, 2, 10);
  assert.equal(whole.pages, 4);
  assert.equal(whole.truncated, false);
});

test('the split a URL names; a key the API would refuse is told', () => {
  assert.equal(splitOf(null), null);
  assert.deepEqual(splitOf('endUser'), { kind: 'endUser' });
  assert.deepEqual(splitOf('metadata.team.name'), { kind: 'metadata', key: 'team.name' });
  assert.match((splitOf('metadata.bad key') as { problem: string }).problem, /"bad key" is not a key/);
  assert.match((splitOf('model') as { problem: string }).problem, /neither endUser nor metadata/);
  assert.match(keyProblem('')!, /enter the key/);
  assert.match(keyProblem('x'.repeat(65))!, /is not a key/);
  assert.equal(keyProblem('project'), null);
  assert.equal(noneLabel({ kind: 'metadata', key: 'project' }), 'no project');
});
