// The usage chart split by end user or by a metadata key (docs/console.md, "Overview"): the pages of
// GET /usage/daily?groupBy= read up to a cap, and the stacks drawn from them. Each day's stacks add up
// exactly to that day's total: the largest groups over the range each have a stack, the charges
// without the attribute (the null group) have one, and "others" is the rest of the day — the day's
// total minus the stacks above, so groups past the cap are in it too (docs/usage.md, "Usage by end
// user and by metadata": the groups of a day add up exactly to that day's days rows).

import type { KilnClient } from './api.ts';

/** What the chart can split by: `endUser` or `metadata.<key>` (GET /usage/daily's `groupBy`). */
export type SplitBy = { kind: 'endUser' } | { kind: 'metadata'; key: string };

/** A metadata key as the API takes it (docs/api.md, "Attribution"). */
export const METADATA_KEY = /^[A-Za-z0-9_.:-]{1,64}$/;

/** Groups with a stack of their own; the rest of each day is "others". */
export const TOP_GROUPS = 8;
/** Rows a page (the API's most) and pages read at most: 5,000 rows, past which the days' rest is "others". */
export const PAGE_LIMIT = 1000;
export const MAX_PAGES = 5;

export function groupByParam(s: SplitBy): string {
  return s.kind === 'endUser' ? 'endUser' : `metadata.${s.key}`;
}

/** The split a URL names (`#/overview?groupBy=metadata.project`), or null for none; a key the API would refuse is `{ problem }`. */
export function splitOf(groupBy: string | null): SplitBy | null | { problem: string } {
  if (!groupBy) return null;
  if (groupBy === 'endUser') return { kind: 'endUser' };
  if (groupBy.startsWith('metadata.')) {
    const key = groupBy.slice('metadata.'.length);
    return METADATA_KEY.test(key) ? { kind: 'metadata', key } : { problem: keyProblem(key)! };
  }
  return { problem: `Split by: "${groupBy}" is neither endUser nor metadata.<key>.` };
}

/** Why a typed metadata key cannot split the chart, or null when it can. */
export function keyProblem(key: string): string | null {
  if (!key) return 'Metadata key: enter the key to split by (such as project).';
  if (!METADATA_KEY.test(key)) return `Metadata key: "${key}" is not a key (1–64 letters, digits, and _ . : -).`;
  return null;
}

/** What the null group is called: the charges without the attribute. */
export function noneLabel(s: SplitBy): string {
  return s.kind === 'endUser' ? 'no end user' : `no ${s.key}`;
}

export interface GroupRow {
  day: string;
  group: string | null;
  spend_micros: number;
}

export interface DayTotalRow {
  day: string;
  spend_micros: number;
}

export interface SplitRead {
  /** The days rows (per day and model) of the first page: what each day's stacks add up to. */
  days: DayTotalRow[];
  groups: GroupRow[];
  /** Pages read. */
  pages: number;
  /** Whether more pages were left unread (their groups are in "others"). */
  truncated: boolean;
}

/**
 * Reads the groups of `from`..`to` page by page (`limit` rows a page), at most `maxPages` pages;
 * `truncated` says whether the API had more.
 */
export async function readSplit(client: Pick<KilnClient, 'usage'>, q: { from: string; to: string; groupBy: string }, signal?: AbortSignal,
  limit = PAGE_LIMIT, maxPages = MAX_PAGES): Promise<SplitRead> {
  const groups: GroupRow[] = [];
  let days: DayTotalRow[] | null = null;
  let cursor: string | null | undefined;
  let pages = 0;
  do {
    const page = await client.usage.daily({ from: q.from, to: q.to, groupBy: q.groupBy, limit, ...(cursor ? { cursor } : {}) }, { signal });
    days ??= page.days;
    groups.push(...(page.groups ?? []));
    cursor = page.next_cursor;
    pages++;
  } while (cursor && pages < maxPages);
  return { days: days ?? [], groups, pages, truncated: !!cursor };
}

export interface SplitSeries {
  /** `group:<name>`, `others` or `none`. */
  key: string;
  kind: 'group' | 'others' | 'none';
  /** The end user or the metadata value (null for "others" and "none"). */
  group: string | null;
  label: string;
  /** Spend per day of the chart's days, in microdollars. */
  perDay: number[];
  total: number;
}

/**
 * The stacks of each day: the `top` largest groups over the range (by spend, then name), the null
 * group, and "others" — each day's total minus those, which holds the smaller groups and any day
 * past the rows read. Series with no spend are left out. Order: the top groups, largest first,
 * then others, then the null group.
 */
export function splitSeries(days: string[], read: Pick<SplitRead, 'days' | 'groups'>, none: string, top = TOP_GROUPS): SplitSeries[] {
  const at = new Map(days.map((d, i) => [d, i]));
  const zero = () => days.map(() => 0);
  const totals = zero();
  for (const r of read.days) {
    const i = at.get(r.day);
    if (i !== undefined) totals[i]! += Number(r.spend_micros);
  }
  const byGroup = new Map<string, number>();
  for (const g of read.groups) if (g.group !== null) byGroup.set(g.group, (byGroup.get(g.group) ?? 0) + Number(g.spend_micros));
  const ranked = [...byGroup].filter(([, v]) => v > 0)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).slice(0, top).map(([g]) => g);
  const topSet = new Set(ranked);
  const perGroup = new Map(ranked.map((g) => [g, zero()]));
  const nulls = zero();
  for (const g of read.groups) {
    const i = at.get(g.day);
    if (i === undefined) continue;
    if (g.group === null) nulls[i]! += Number(g.spend_micros);
    else if (topSet.has(g.group)) perGroup.get(g.group)![i]! += Number(g.spend_micros);
  }
  // The rest of each day, never below 0 (a page read while charges settled may list a little more than the first page's day).
  const others = totals.map((t, i) => Math.max(0, t - nulls[i]! - ranked.reduce((s, g) => s + perGroup.get(g)![i]!, 0)));
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const out: SplitSeries[] = ranked.map((g) => ({ key: `group:${g}`, kind: 'group' as const, group: g, label: g, perDay: perGroup.get(g)!, total: sum(perGroup.get(g)!) }));
  if (sum(others) > 0) out.push({ key: 'others', kind: 'others', group: null, label: 'others', perDay: others, total: sum(others) });
  if (sum(nulls) > 0) out.push({ key: 'none', kind: 'none', group: null, label: none, perDay: nulls, total: sum(nulls) });
  return out;
}

/** How many groups (not the null group) the rows name beyond the top ones. */
export function otherGroupCount(read: Pick<SplitRead, 'groups'>, top = TOP_GROUPS): number {
  const names = new Set(read.groups.filter((g) => g.group !== null && Number(g.spend_micros) > 0).map((g) => g.group));
  return Math.max(0, names.size - top);
}
