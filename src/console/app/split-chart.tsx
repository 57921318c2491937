// The Overview's chart split by end user or by a metadata key (docs/console.md, "Splitting the
// chart"): the "Split by" control, kept in the URL's hash (`#/overview?groupBy=endUser`), and the
// split chart — a stack per large group, "others" and the charges without the attribute, each day
// adding up to the unsplit bar — with a legend whose groups open the gallery filtered by them.

import { useEffect, useState } from 'preact/hooks';
import { money, type KilnClient } from './api.ts';
import { daysBetween, StackedBars } from './chart.tsx';
import { galleryHref } from './generations.tsx';
import { Alert, Loading, useLoad } from './ui.tsx';
import { groupByParam, keyProblem, MAX_PAGES, noneLabel, otherGroupCount, PAGE_LIMIT, readSplit, splitSeries, TOP_GROUPS, type SplitBy, type SplitSeries } from './usage-split.ts';

const GROUP_COLORS = ['#ea580c', '#2563eb', '#16a34a', '#9333ea', '#db2777', '#0891b2', '#ca8a04', '#854d0e'];
const OTHERS_COLOR = '#94a3b8';
const NONE_COLOR = '#57534e';

function colorOf(s: SplitSeries, i: number): string {
  return s.kind === 'others' ? OTHERS_COLOR : s.kind === 'none' ? NONE_COLOR : GROUP_COLORS[i % GROUP_COLORS.length]!;
}

/** "others", with what it holds: the smaller groups, and the groups past the rows read. */
function othersLabel(more: number, truncated: boolean): string {
  const parts = [...(more > 0 ? [`${more.toLocaleString('en-US')} more ${more === 1 ? 'group' : 'groups'}`] : []), ...(truncated ? ['the groups past the rows read'] : [])];
  return parts.length ? `others (${parts.join(' and ')})` : 'others';
}

/** What the split is called in a title: "end user" or the metadata key. */
export function splitName(s: SplitBy): string {
  return s.kind === 'endUser' ? 'end user' : s.key;
}

/** The URL (a hash) of the overview with this split (null: none). */
export function overviewHref(s: SplitBy | null): string {
  return s ? `#/overview?groupBy=${encodeURIComponent(groupByParam(s))}` : '#/overview';
}

/**
 * "Split by": none, end user, or a metadata key typed into its field (applied with Enter or
 * Split). Every applied change is a new URL; a key the API would refuse is told here, not sent.
 */
export function SplitControl({ split, navigate }: { split: SplitBy | null; navigate: (s: SplitBy | null) => void }) {
  const [mode, setMode] = useState<'none' | 'endUser' | 'metadata'>(split ? (split.kind === 'endUser' ? 'endUser' : 'metadata') : 'none');
  const [key, setKey] = useState(split?.kind === 'metadata' ? split.key : '');
  const [problem, setProblem] = useState<string | null>(null);
  // A link or Back changed the split: the control shows it.
  useEffect(() => {
    setMode(split ? (split.kind === 'endUser' ? 'endUser' : 'metadata') : 'none');
    if (split?.kind === 'metadata') setKey(split.key);
    setProblem(null);
  }, [split ? groupByParam(split) : '']);
  const apply = (e: Event) => {
    e.preventDefault();
    const k = key.trim();
    const bad = keyProblem(k);
    if (bad) return setProblem(bad);
    setProblem(null);
    navigate({ kind: 'metadata', key: k });
  };
  return (
    <form class="split-bar" onSubmit={apply} aria-label="Split the chart" noValidate>
      <label>Split by
        <select value={mode} onChange={(e) => {
          const m = (e.target as HTMLSelectElement).value as typeof mode;
          setMode(m);
          setProblem(null);
          if (m === 'none') navigate(null);
          else if (m === 'endUser') navigate({ kind: 'endUser' });
          // A metadata key waits for its key.
        }}>
          <option value="none">Nothing (by model)</option>
          <option value="endUser">End user</option>
          <option value="metadata">Metadata key</option>
        </select>
      </label>
      {mode === 'metadata' && (
        <>
          <label>Metadata key
            <input type="text" value={key} autoComplete="off" spellcheck={false} placeholder="project" maxLength={64}
              aria-describedby={problem ? 'split-problem' : undefined} aria-invalid={problem ? 'true' : undefined}
              onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
          </label>
          <div class="filter-apply"><button type="submit" class="btn small">Split</button></div>
        </>
      )}
      {problem && <p id="split-problem" class="notice error split-problem" role="alert">{problem}</p>}
    </form>
  );
}

/** The chart split by `split` over `from`..`to` (the period the unsplit chart shows). */
export function SplitChart({ client, split, from, to }: { client: KilnClient; split: SplitBy; from: string; to: string }) {
  const groupBy = groupByParam(split);
  const [load] = useLoad((signal) => readSplit(client, { from, to, groupBy }, signal), [client, groupBy, from, to]);
  if (load.state === 'loading') return <Loading what={`spend by ${splitName(split)}`} />;
  if (load.state === 'error') return <Alert error={load.error} />;
  const read = load.value;
  const days = daysBetween(from, to);
  const series = splitSeries(days, read, noneLabel(split));
  const total = series.reduce((s, x) => s + x.total, 0);
  const more = otherGroupCount(read);
  const lastDay = read.groups.at(-1)?.day;
  const label = `Daily spend by ${splitName(split)} from ${from} to ${to}: ${money(total)} in total` +
    (series.length ? `; ${series.map((s) => `${s.label} ${money(s.total)}`).join(', ')}` : ', no spend yet');
  const href = (g: string) => galleryHref(split.kind === 'endUser' ? { endUser: g } : { metadata: [[split.key, g]] });
  return (
    <div class="chart split-chart" data-group-by={groupBy} data-total-micros={total} data-truncated={read.truncated ? 'true' : undefined}>
      {series.length === 0 && <p class="muted small">No spend in this period yet.</p>}
      <StackedBars days={days} label={label} series={series.map((s, i) => ({ key: s.key, color: colorOf(s, i), perDay: s.perDay }))} />
      {series.length > 0 && (
        <ul class="legend split-legend" aria-label={`Spend by ${splitName(split)}`}>
          {series.map((s, i) => (
            <li key={s.key} data-series={s.key} data-kind={s.kind} data-total-micros={s.total}>
              <span class="swatch" aria-hidden="true" style={{ background: colorOf(s, i) }} />
              {s.kind === 'group'
                ? <a href={href(s.group!)} title={`The generations of ${splitName(split)} ${s.group}`}>{s.label}</a>
                : <span>{s.kind === 'others' ? othersLabel(more, read.truncated) : s.label}</span>}
              {' '}<span class="muted">{money(s.total)}</span>
            </li>
          ))}
        </ul>
      )}
      <p class="muted small">
        The {TOP_GROUPS} largest groups over the period have a colour each; each day's stacks add up to its bar unsplit. A group opens its generations in the gallery
        (made through the API; spend also counts workflow runs, batches and MCP).
        {read.truncated && <> <strong>Only the first {(MAX_PAGES * PAGE_LIMIT).toLocaleString('en-US')} rows were read</strong>{lastDay ? ` (through ${lastDay})` : ''}: the rest of the spend is in "others".</>}
      </p>
      <details class="chart-table">
        <summary>Show as a table</summary>
        <table>
          <thead><tr><th scope="col">Day</th><th scope="col">{split.kind === 'endUser' ? 'End user' : split.key}</th><th scope="col" class="num">Spend</th></tr></thead>
          <tbody>
            {total === 0 && <tr><td colSpan={3} class="muted">No spend in this period.</td></tr>}
            {days.flatMap((d, di) => series.filter((s) => s.perDay[di]! > 0).map((s) => (
              <tr key={`${d}-${s.key}`} data-day={d} data-series={s.key} data-micros={s.perDay[di]}>
                <td>{d}</td><td>{s.label}</td><td class="num">{money(s.perDay[di]!)}</td>
              </tr>
            )))}
          </tbody>
        </table>
      </details>
    </div>
  );
}
