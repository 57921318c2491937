// Overview: the key's tier and budgets (personal, and the workspace pool for workspace keys),
// and daily spend by model for the period.

import { call, hasRoute, mine, money, when, type KilnClient } from './api.ts';
import { SpendChart, type DaySpend } from './chart.tsx';
import { Alert, Loading, Section, useLoad } from './ui.tsx';

interface Daily {
  from: string;
  to: string;
  days: DaySpend[];
  /** Where the figures came from, said under the chart. */
  source: string;
}

const today = () => new Date().toISOString().slice(0, 10);
const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);

/**
 * GET /usage/daily; on a server without it, the same figures summed from GET /generations; on one
 * without that either, from the generations this browser started.
 */
async function loadDaily(client: KilnClient, signal: AbortSignal): Promise<Daily> {
  if (await hasRoute(client, 'GET', '/usage/daily')) {
    const d = await call<{ from: string; to: string; days: DaySpend[] }>(client, 'GET', '/usage/daily', { signal });
    return { from: d.from, to: d.to, days: d.days, source: 'GET /usage/daily' };
  }
  const from = daysAgo(13);
  const to = today();
  const sum = new Map<string, DaySpend>();
  const add = (day: string, model: string, micros: number) => {
    if (day < from || day > to || !micros) return;
    const k = `${day}|${model}`;
    const row = sum.get(k) ?? { day, model_id: model, spend_micros: 0, charges: 0 };
    row.spend_micros += micros;
    row.charges = (row.charges ?? 0) + 1;
    sum.set(k, row);
  };
  let source = 'the generations this browser started (this server has neither GET /usage/daily nor GET /generations)';
  if (await hasRoute(client, 'GET', '/generations')) {
    type Item = { id: string; createdAt?: string; result: { costMicros: number; model?: string } | null };
    const local = new Map(mine().map((m) => [m.id, m]));
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const list = await call<{ data: Item[]; nextCursor: string | null }>(client, 'GET', '/generations', { query: { limit: 100, cursor, since: `${from}T00:00:00Z` }, signal });
      for (const g of list.data) {
        const at = g.createdAt ?? local.get(g.id)?.createdAt;
        if (at && g.result) add(at.slice(0, 10), g.result.model ?? 'unknown', g.result.costMicros);
      }
      if (!list.nextCursor) break;
      cursor = list.nextCursor;
    }
    source = 'GET /generations (this server has no GET /usage/daily)';
  } else {
    for (const m of mine()) {
      const r = m.last?.result;
      if (r) add(m.createdAt.slice(0, 10), r.model ?? m.request.model ?? 'default', r.costMicros);
    }
  }
  return { from, to, days: [...sum.values()].sort((a, b) => a.day.localeCompare(b.day)), source };
}

function Meter({ label, used, budget, remaining, resets }: { label: string; used: number | null; budget: number | null; remaining: number | null; resets: string | null }) {
  const pct = budget && used !== null ? Math.min(100, (used / budget) * 100) : 0;
  return (
    <div class="card meter">
      <h2 class="card-title">{label}</h2>
      <p class="big-number">{money(used)} <span class="muted">used</span></p>
      <div class="bar" role="progressbar" aria-label={`${label} used`} aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(pct)}
        aria-valuetext={budget === null ? 'Unlimited' : `${Math.round(pct)}% of ${money(budget)}`}>
        <span style={{ width: `${pct}%` }} class={pct >= 90 ? 'hot' : pct >= 70 ? 'warm' : ''} />
      </div>
      <dl class="facts">
        <div><dt>Budget</dt><dd>{budget === null ? 'Unlimited' : money(budget)}</dd></div>
        <div><dt>Remaining</dt><dd>{remaining === null ? 'Unlimited' : money(remaining)}</dd></div>
        <div><dt>Resets</dt><dd>{when(resets)}</dd></div>
      </dl>
    </div>
  );
}

export function Overview({ client }: { client: KilnClient }) {
  const [usage] = useLoad((signal) => client.usage.get({ signal }), [client]);
  const [daily] = useLoad((signal) => loadDaily(client, signal), [client]);
  return (
    <Section title="Overview" intro="What this key can spend, and where the money went.">
      {usage.state === 'loading' && <Loading what="usage" />}
      {usage.state === 'error' && <Alert error={usage.error} />}
      {usage.state === 'ok' && (() => {
        const u = usage.value;
        // `held` is not in GET /usage: used_micros includes reservations in flight.
        const held = (u as { held_micros?: number }).held_micros;
        return (
          <div class="grid cards">
            <div class="card tier">
              <h2 class="card-title">Plan</h2>
              <p class="big-number">{u.tier.replace('_', ' ')}</p>
              <dl class="facts">
                <div><dt>Billing scope</dt><dd>{u.scope === 'workspace' ? 'Workspace pool' : 'Personal budget'}</dd></div>
                {u.workspace_id && <div><dt>Workspace</dt><dd><code>{u.workspace_id.slice(0, 8)}</code></dd></div>}
                <div><dt>Held now</dt><dd>{held !== undefined ? money(held) : 'included in used'}</dd></div>
              </dl>
            </div>
            <Meter label="Personal budget" used={u.used_micros} budget={u.token_budget_micros} remaining={u.remaining_micros} resets={u.resets_at} />
            {u.scope === 'workspace' && (
              u.workspace_used_micros === null
                ? <div class="card"><h2 class="card-title">Workspace pool</h2><p class="muted">No active Team plan for this workspace.</p></div>
                : <Meter label="Workspace pool" used={u.workspace_used_micros} budget={u.workspace_budget_micros} remaining={u.workspace_remaining_micros} resets={u.workspace_resets_at} />
            )}
          </div>
        );
      })()}
      <div class="card">
        <h2 class="card-title">Daily spend by model</h2>
        {daily.state === 'loading' && <Loading what="daily spend" />}
        {daily.state === 'error' && <Alert error={daily.error} />}
        {daily.state === 'ok' && (
          <>
            <SpendChart rows={daily.value.days} from={daily.value.from} to={daily.value.to} />
            <p class="muted small">From {daily.value.source}. Days are UTC.</p>
          </>
        )}
      </div>
    </Section>
  );
}
