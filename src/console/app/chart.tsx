// Daily spend by model as stacked bars (uPlot on a canvas), with an accessible name and the same
// numbers as a table for anyone who cannot see the chart.

import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { money } from './api.ts';

export interface DaySpend {
  day: string;
  model_id: string;
  spend_micros: number;
  charges?: number;
}

const PALETTE = ['#ea580c', '#2563eb', '#16a34a', '#9333ea', '#db2777', '#0891b2', '#ca8a04', '#64748b'];
/** A bar is never narrower than this (CSS px): at a phone's width a month of days left 5 px. */
const MIN_BAR_PX = 6;
/** A day's spend on a model is drawn at least about this tall (CSS px), however small beside the others. */
const MIN_SEGMENT_PX = 5;
const HALF_DAY = 43_200;

/**
 * The stacks as drawn: each series the running sum, its non-zero values raised so that every
 * segment is at least `minValue` tall (a $0.0001 code job beside $0.01 of images was under a
 * pixel). The table and the legend keep the exact amounts.
 */
export function stackForDrawing(perModel: number[][], minValue: number): number[][] {
  const stacked: number[][] = [];
  let acc = (perModel[0] ?? []).map(() => 0);
  for (const s of perModel) {
    acc = acc.map((v, i) => v + (s[i]! > 0 ? Math.max(s[i]!, minValue) : 0));
    stacked.push(acc);
  }
  return stacked;
}

export function colorOf(i: number): string {
  return PALETTE[i % PALETTE.length]!;
}

/** Every day from `from` to `to` (YYYY-MM-DD, inclusive), at most 400. */
export function daysBetween(from: string, to: string): string[] {
  const out: string[] = [];
  const d = new Date(`${from}T00:00:00Z`);
  const end = new Date(`${to}T00:00:00Z`).getTime();
  while (d.getTime() <= end && out.length < 400) {
    out.push(d.toISOString().slice(0, 10));
    d.setUTCDate(d.getUTCDate() + 1);
  }
  return out;
}

/** One stack of the bars: its spend per day of the chart's days, in microdollars. */
export interface BarSeries {
  key: string;
  color: string;
  perDay: number[];
}

/**
 * Stacked daily bars (uPlot on a canvas) named by `label` for screen readers; the first series is
 * drawn at the bottom. The legend and the table are the caller's.
 */
export function StackedBars({ days, series, label }: { days: string[]; series: BarSeries[]; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    // In dollars, for the axis.
    const perSeries = series.map((s) => s.perDay.map((v) => v / 1e6));
    const xs = days.map((d) => Date.parse(`${d}T12:00:00Z`) / 1000);
    // Stacked: each series is the running sum, drawn tallest first so the smaller ones sit on top.
    const top = Math.max(0, ...stackForDrawing(perSeries, 0).at(-1) ?? []);
    const order = series.map((_, i) => i).reverse();
    const drawn = (plotHeight: number) => {
      const stacked = stackForDrawing(perSeries, plotHeight > 0 ? (top * 1.15 * MIN_SEGMENT_PX) / plotHeight : 0);
      return [xs, ...order.map((i) => stacked[i]!)] as uPlot.AlignedData;
    };
    const dark = matchMedia('(prefers-color-scheme: dark)').matches;
    const axis = { stroke: dark ? '#a1a1aa' : '#52525b', grid: { stroke: dark ? '#27272a' : '#e4e4e7', width: 1 }, ticks: { show: false } };
    const bars = uPlot.paths.bars!({ size: [0.7, 48, MIN_BAR_PX], gap: 1 });
    const opts: uPlot.Options = {
      width: Math.max(280, el.clientWidth),
      height: 240,
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      // Half a day beyond the first and the last: their bars are drawn whole, not cut in half by
      // the plot's edges (a single day's bar at the period's start was a hairline on a phone).
      scales: { x: { time: true, range: () => [xs[0]! - HALF_DAY, xs[xs.length - 1]! + HALF_DAY] }, y: { range: (_u, _min, max) => [0, max > 0 ? Math.max(max, top) * 1.15 : 0.01] } },
      axes: [
        {
          ...axis,
          // A label under the bar it names (the day's noon), from the first day on, every `step`
          // days so they fit: uPlot's own time ticks fall on midnights, between two bars.
          grid: { show: false },
          splits: (u) => {
            const step = Math.max(1, Math.ceil(xs.length / Math.max(2, Math.floor(u.width / 72))));
            return xs.filter((_, i) => i % step === 0);
          },
          values: (_u, ticks) => ticks.map((t) => new Date(t * 1000).toLocaleDateString(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' })),
        },
        { ...axis, size: 64, values: (_u, ticks) => ticks.map((t) => money(Math.round(t * 1e6))) },
      ],
      series: [{}, ...order.map((i) => ({ label: series[i]!.key, stroke: series[i]!.color, fill: series[i]!.color, width: 0, paths: bars, points: { show: false } }))],
    };
    const plot = new uPlot(opts, series.length ? drawn(0) : [xs, days.map(() => 0)], el);
    // The plot's height is known once it is laid out: then small segments get their minimum.
    if (series.length) plot.setData(drawn(plot.bbox.height / uPlot.pxRatio));
    const ro = new ResizeObserver(() => plot.setSize({ width: Math.max(280, el.clientWidth), height: 240 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.destroy();
    };
  }, [JSON.stringify(days), JSON.stringify(series)]);
  return <div ref={box} class="chart-canvas" role="img" aria-label={label} />;
}

export function SpendChart({ rows, from, to }: { rows: DaySpend[]; from: string; to: string }) {
  const days = daysBetween(from, to);
  const models = [...new Set(rows.map((r) => r.model_id))].sort();
  // Per model, spend per day (microdollars).
  const perModel = models.map((m) => days.map((d) => rows.filter((r) => r.day === d && r.model_id === m).reduce((s, r) => s + Number(r.spend_micros), 0)));
  const total = rows.reduce((s, r) => s + Number(r.spend_micros), 0);
  const label = `Daily spend by model from ${from} to ${to}: ${money(total)} in total` +
    (models.length ? ` across ${models.length} model${models.length === 1 ? '' : 's'} (${models.join(', ')})` : ', no spend yet');

  return (
    <div class="chart" data-total-micros={total}>
      {models.length === 0 && <p class="muted small">No spend in this period yet.</p>}
      <StackedBars days={days} label={label} series={models.map((m, i) => ({ key: m, color: colorOf(i), perDay: perModel[i]! }))} />
      {models.length > 0 && (
        <ul class="legend" aria-hidden="true">
          {models.map((m, i) => (
            <li key={m} data-model={m}><span class="swatch" style={{ background: colorOf(i) }} />{m} <span class="muted">{money(perModel[i]!.reduce((a, b) => a + b, 0))}</span></li>
          ))}
        </ul>
      )}
      <details class="chart-table">
        <summary>Show as a table</summary>
        <table>
          <thead><tr><th scope="col">Day</th><th scope="col">Model</th><th scope="col" class="num">Spend</th></tr></thead>
          <tbody>
            {rows.length === 0 && <tr><td colSpan={3} class="muted">No spend in this period.</td></tr>}
            {rows.map((r) => <tr key={`${r.day}-${r.model_id}`} data-day={r.day} data-micros={Number(r.spend_micros)}><td>{r.day}</td><td>{r.model_id}</td><td class="num">{money(Number(r.spend_micros))}</td></tr>)}
          </tbody>
        </table>
      </details>
    </div>
  );
}
