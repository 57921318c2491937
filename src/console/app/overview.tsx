// Overview: the key's tier and budgets (personal, and the workspace pool for workspace keys),
// and daily spend by model for the period, or split by end user or a metadata key
// (split-chart.tsx; the split is the hash's `groupBy`).

import { money, shortId, whenMinute, type KilnClient } from './api.ts';
import { SpendChart, type DaySpend } from './chart.tsx';
import { overviewHref, SplitChart, SplitControl, splitName } from './split-chart.tsx';
import { Alert, Loading, Section, useHashQuery, useLoad } from './ui.tsx';
import { splitOf } from './usage-split.ts';

interface Daily {
  from: string;
  to: string;
  days: DaySpend[];
  /** Reservations of generations still in flight, inside the days' spend. */
  heldMicros: number;
}

/** GET /usage/daily for the current period: exact, read from the ledger's daily rollup. */
async function loadDaily(client: KilnClient, signal: AbortSignal): Promise<Daily> {
  const d = await client.usage.daily({}, { signal });
  return { from: d.from, to: d.to, days: d.days, heldMicros: d.days.reduce((s, x) => s + x.held_micros, 0) };
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
        <div><dt>Resets</dt><dd>{whenMinute(resets)}</dd></div>
      </dl>
    </div>
  );
}

export function Overview({ client }: { client: KilnClient }) {
  const [usage] = useLoad((signal) => client.usage.get({ signal }), [client]);
  const [daily] = useLoad((signal) => loadDaily(client, signal), [client]);
  const asked = splitOf(useHashQuery().get('groupBy'));
  const split = asked && 'problem' in asked ? null : asked;
  return (
    <Section title="Overview" intro="What this key can spend, and where the money went.">
      {usage.state === 'loading' && <Loading what="usage" />}
      {usage.state === 'error' && <Alert error={usage.error} />}
      {usage.state === 'ok' && (() => {
        const u = usage.value;
        // GET /usage's used_micros includes reservations in flight; the daily rows say how much.
        const held = daily.state === 'ok' ? daily.value.heldMicros : undefined;
        return (
          <div class="grid cards">
            <div class="card tier">
              <h2 class="card-title">Plan</h2>
              <p class="big-number">{u.tier.replace('_', ' ')}</p>
              <dl class="facts">
                <div><dt>Billing scope</dt><dd>{u.scope === 'workspace' ? 'Workspace pool' : 'Personal budget'}</dd></div>
                {u.workspace_id && <div><dt>Workspace</dt><dd><code title={u.workspace_id}>{shortId(u.workspace_id)}</code></dd></div>}
                <div><dt>Held now</dt><dd>{held !== undefined ? money(held) : '…'}</dd></div>
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
        <div class="card-head">
          <h2 class="card-title">Daily spend by {split ? splitName(split) : 'model'}</h2>
          <SplitControl split={split} navigate={(s) => { location.hash = overviewHref(s); }} />
        </div>
        {asked && 'problem' in asked && <p class="notice error" role="alert">{asked.problem}</p>}
        {daily.state === 'loading' && <Loading what="daily spend" />}
        {daily.state === 'error' && <Alert error={daily.error} />}
        {daily.state === 'ok' && (
          <>
            {split
              ? <SplitChart key={overviewHref(split)} client={client} split={split} from={daily.value.from} to={daily.value.to} />
              : <SpendChart rows={daily.value.days} from={daily.value.from} to={daily.value.to} />}
            <p class="muted small">This period, {daily.value.from} to {daily.value.to} (UTC days), from <code>GET /usage/daily</code>{split ? <> with <code>groupBy={split.kind === 'endUser' ? 'endUser' : `metadata.${split.key}`}</code></> : null}; it adds up to the budget used.</p>
          </>
        )}
      </div>
    </Section>
  );
}
