// End users: the app's own users (the `endUser` of requests) by spend in a calendar month
// (GET /end-users, "Load more" for the next page), each with its generations, its cap and what the
// cap has left (GET /end-users/{endUser}), a link to its generations in the gallery, and — for a
// credential with the `keys` scope (a console session has it) — setting or removing the cap
// (PUT / DELETE /end-users/{endUser}), the API's problems shown on the fields they name
// (docs/api.md, "Budgets per end user" and "Spend by end user and by tag").

import { useEffect, useState } from 'preact/hooks';
import { KilnError, money, type KilnClient } from './api.ts';
import { galleryHref } from './generations.tsx';
import { Alert, ConfirmDialog, Empty, Loading, Section, useHashQuery, useLoad, type Load, type Me } from './ui.tsx';
import type { EndUser } from '../../client/index.ts';

/** End users a page: each row reads its cap (GET /end-users/{endUser}). */
export const END_USERS_PAGE = 25;

type Cap = Awaited<ReturnType<KilnClient['endUsers']['get']>>;

interface Page {
  data: EndUser[];
  nextCursor: string | null;
}

/** This calendar month (UTC) as YYYY-MM. */
export function thisMonth(now = new Date()): string {
  return now.toISOString().slice(0, 7);
}

/** A month's first and last UTC days. */
export function monthRange(month: string): { from: string; to: string } {
  const [y, m] = month.split('-').map(Number) as [number, number];
  const last = new Date(Date.UTC(y, m, 0)).getUTCDate();
  return { from: `${month}-01`, to: `${month}-${String(last).padStart(2, '0')}` };
}

const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/;

/** A month as people read it: "November 2026". */
function monthName(month: string): string {
  return new Date(`${month}-01T00:00:00Z`).toLocaleDateString('en-US', { month: 'long', year: 'numeric', timeZone: 'UTC' });
}

export function EndUsers({ client, me }: { client: KilnClient; me: Load<Me> }) {
  const query = useHashQuery();
  const asked = query.get('month');
  const month = asked && MONTH.test(asked) ? asked : thisMonth();
  const canManage = me.state === 'ok' && me.value.scopes.includes('keys');
  const { from, to } = monthRange(month);
  const [read, setRead] = useState<{ month: string; pages: Page[] }>({ month: '', pages: [] });
  const [load, reload] = useLoad(async (signal) => {
    const p = await client.usage.endUsers({ from, to, limit: END_USERS_PAGE }, { signal });
    setRead({ month, pages: [p] });
    return p;
  }, [client, month]);
  const [more, setMore] = useState<{ busy: boolean; error?: unknown }>({ busy: false });
  useEffect(() => setMore({ busy: false }), [month]);
  const current = read.month === month;
  const rows = current ? read.pages.flatMap((p) => p.data) : [];
  const last = current ? read.pages.at(-1) : undefined;
  const loadMore = async () => {
    if (!last?.nextCursor) return;
    setMore({ busy: true });
    try {
      const p = await client.usage.endUsers({ from, to, limit: END_USERS_PAGE, cursor: last.nextCursor });
      setRead((r) => (r.month === month ? { ...r, pages: [...r.pages, p] } : r));
      setMore({ busy: false });
    } catch (error) {
      setMore({ busy: false, error });
    }
  };
  return (
    <Section title="End users" intro={<>Your app's own users, as its requests name them with <code>endUser</code>: what each spent in a month, by spend, and their caps.</>}
      actions={<button type="button" class="btn ghost small" onClick={reload}>Refresh</button>}>
      <div class="month-bar">
        <div>
          <label for="eu-month">Month</label>
          <input id="eu-month" type="month" value={month} max={thisMonth()} required
            onChange={(e) => {
              const v = (e.target as HTMLInputElement).value;
              if (MONTH.test(v)) location.hash = `#/end-users?month=${v}`;
            }} />
        </div>
        {month !== thisMonth() && <a class="btn ghost small" href="#/end-users">This month</a>}
      </div>
      {me.state === 'ok' && !canManage && (
        <p class="notice info">This key can read caps but not set them: that needs the <code>keys</code> scope (a console session has it).</p>
      )}
      <div class="end-users-results" data-month={current ? month : undefined} aria-busy={current ? undefined : 'true'}>
        {(load.state === 'loading' || (load.state === 'ok' && !current)) && <Loading what="end users" />}
        {load.state === 'error' && <Alert error={load.error} />}
        {load.state === 'ok' && current && rows.length === 0 && (
          <Empty title={`No end user spent in ${monthName(month)}`}>Requests that name an <code>endUser</code> are counted here (<a href="/docs">API docs</a>).</Empty>
        )}
        {rows.length > 0 && (
          <div class="table-card card">
            <table class="table admin-table end-users">
              <caption class="sr-only">End users by spend in {monthName(month)}</caption>
              <thead><tr>
                <th scope="col">End user</th><th scope="col" class="num">Used in {monthName(month)}</th><th scope="col" class="num">Generations</th>
                <th scope="col">Cap</th>{canManage && <th scope="col"><span class="sr-only">Actions</span></th>}
              </tr></thead>
              <tbody>
                {rows.map((u) => <EndUserRow key={u.endUser} client={client} u={u} canManage={canManage} />)}
              </tbody>
            </table>
          </div>
        )}
        {current && last?.nextCursor && (
          <div class="row pager">
            <button type="button" class="btn ghost" disabled={more.busy} onClick={loadMore}>{more.busy ? 'Loading…' : 'Load more'}</button>
          </div>
        )}
        {more.error !== undefined && <Alert error={more.error} />}
      </div>
    </Section>
  );
}

/** A cap as words: "$2.00 a day, 30 requests a minute". */
function capText(c: Cap): string {
  if (c.budgetMicros === null) return 'No cap';
  return `${money(c.budgetMicros)} a ${c.period}${c.rpm ? `, ${c.rpm.toLocaleString('en-US')} requests a minute` : ''}`;
}

function EndUserRow({ client, u, canManage }: { client: KilnClient; u: EndUser; canManage: boolean }) {
  const [cap, , setCap] = useLoad((signal) => client.endUsers.get(u.endUser, { signal }), [client, u.endUser]);
  const [mode, setMode] = useState<'idle' | 'edit' | 'remove'>('idle');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const capped = cap.state === 'ok' && cap.value.budgetMicros !== null;
  const remove = async () => {
    setBusy(true);
    setError(null);
    try {
      await client.endUsers.remove(u.endUser);
      setCap(await client.endUsers.get(u.endUser));
      setMode('idle');
    } catch (err) {
      setError(err);
      setMode('idle');
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <tr data-end-user={u.endUser} data-used-micros={u.usedMicros} data-cap-micros={cap.state === 'ok' ? String(cap.value.budgetMicros) : undefined}>
        <th scope="row"><a href={galleryHref({ endUser: u.endUser })} title={`The generations of ${u.endUser}`}>{u.endUser}</a></th>
        <td class="num used" data-label="Used">{money(u.usedMicros)}</td>
        <td class="num" data-label="Generations">{u.generations.toLocaleString('en-US')}</td>
        <td class="cap" data-label="Cap">
          {cap.state === 'loading' && <span class="muted">…</span>}
          {cap.state === 'error' && <span class="notice error inline" role="alert">Cap: {(cap.error as Error).message}</span>}
          {cap.state === 'ok' && (
            <>
              <span class="cap-text">{capText(cap.value)}</span>
              {cap.value.budgetMicros !== null && (
                <span class="cap-used muted small">{money(cap.value.usedMicros)} used this {cap.value.period}, {money(cap.value.remainingMicros)} left</span>
              )}
            </>
          )}
        </td>
        {canManage && (
          <td class="nowrap">
            <div class="actions">
              <button type="button" class="btn ghost small" aria-expanded={mode === 'edit'} aria-label={`${capped ? 'Change' : 'Set'} cap of ${u.endUser}`}
                disabled={cap.state !== 'ok'} onClick={() => { setError(null); setMode(mode === 'edit' ? 'idle' : 'edit'); }}>{capped ? 'Change cap' : 'Set cap'}</button>
              {capped && (
                <button type="button" class="btn danger small" aria-label={`Remove cap of ${u.endUser}`} onClick={() => { setError(null); setMode('remove'); }}>Remove cap</button>
              )}
            </div>
          </td>
        )}
      </tr>
      {mode === 'edit' && cap.state === 'ok' && (
        <tr class="row-panel">
          <td colSpan={5}>
            <CapForm client={client} endUser={u.endUser} cap={cap.value} onSaved={(c) => { setCap(c); setMode('idle'); }} onCancel={() => setMode('idle')} />
          </td>
        </tr>
      )}
      {error !== null && (
        <tr class="row-panel"><td colSpan={5}><Alert error={error} /></td></tr>
      )}
      {mode === 'remove' && (
        <ConfirmDialog title={`Remove the cap of ${u.endUser}?`} confirm="Remove cap" danger busy={busy} onConfirm={remove} onCancel={() => setMode('idle')}>
          <p>Its requests are then bound only by the account's (or workspace's) budget and the key's. What it spent this period stays counted.</p>
        </ConfirmDialog>
      )}
    </>
  );
}

/** Dollars typed by a person → microdollars, a sign allowed (the API says what it refuses); NaN when not a number. */
function dollars(text: string): number {
  const t = text.trim().replace(/^\$/, '');
  if (!/^-?\d+(\.\d+)?$|^-?\.\d+$/.test(t)) return NaN;
  return Math.round(Number(t) * 1_000_000);
}

type Field = 'budget' | 'period' | 'rpm';
const FIELD_OF: Record<string, Field> = { '/budgetMicros': 'budget', '/period': 'period', '/rpm': 'rpm' };

/** Set or change a cap: budget in dollars, per day or month, and an optional rpm (PUT /end-users/{endUser}). */
function CapForm({ client, endUser, cap, onSaved, onCancel }: { client: KilnClient; endUser: string; cap: Cap; onSaved: (c: Cap) => void; onCancel: () => void }) {
  const [budget, setBudget] = useState(cap.budgetMicros === null ? '' : String(cap.budgetMicros / 1_000_000));
  const [period, setPeriod] = useState<string>(cap.budgetMicros === null ? 'month' : cap.period);
  const [rpm, setRpm] = useState(cap.rpm === null ? '' : String(cap.rpm));
  const [problems, setProblems] = useState<Partial<Record<Field, string>>>({});
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const id = (f: Field) => `cap-${f}-${endUser.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    const mine: Partial<Record<Field, string>> = {};
    const budgetMicros = dollars(budget);
    if (Number.isNaN(budgetMicros)) mine.budget = budget.trim() ? 'Enter an amount in dollars, such as 2 or 0.50.' : 'Enter the budget, in dollars.';
    const r = rpm.trim();
    if (r && !/^-?\d+$/.test(r)) mine.rpm = 'A whole number of requests a minute, or blank for no limit.';
    setProblems(mine);
    if (Object.keys(mine).length) return;
    setBusy(true);
    try {
      const saved = await client.endUsers.set(endUser, { budgetMicros, period: period as 'day' | 'month', rpm: r ? Number(r) : null });
      onSaved(saved);
    } catch (err) {
      // The API's problems, each on the field it names; the rest in the alert.
      const placed: Partial<Record<Field, string>> = {};
      const rest: string[] = [];
      for (const d of err instanceof KilnError ? err.details : []) {
        const f = FIELD_OF[d.path];
        if (f) placed[f] = placed[f] ? `${placed[f]} ${d.message}` : d.message;
        else rest.push(`${d.path}: ${d.message}`);
      }
      setProblems(placed);
      if (!Object.keys(placed).length || rest.length) setError(err);
    } finally {
      setBusy(false);
    }
  };
  const problem = (f: Field) => problems[f] && <p id={`${id(f)}-problem`} class="field-problem" role="alert">{problems[f]}</p>;
  const described = (f: Field) => (problems[f] ? `${id(f)}-problem` : undefined);
  return (
    <form class="cap-form" onSubmit={submit} noValidate aria-label={`Cap of ${endUser}`}>
      <div class="field">
        <label for={id('budget')}>Budget, $</label>
        <input id={id('budget')} type="text" inputMode="decimal" placeholder="e.g. 2" value={budget} autoComplete="off"
          aria-invalid={problems.budget ? 'true' : undefined} aria-describedby={described('budget')} onInput={(e) => setBudget((e.target as HTMLInputElement).value)} />
        {problem('budget')}
      </div>
      <div class="field">
        <label for={id('period')}>Per</label>
        <select id={id('period')} value={period} aria-invalid={problems.period ? 'true' : undefined} aria-describedby={described('period')}
          onChange={(e) => setPeriod((e.target as HTMLSelectElement).value)}>
          <option value="day">UTC day</option>
          <option value="month">Calendar month</option>
        </select>
        {problem('period')}
      </div>
      <div class="field">
        <label for={id('rpm')}>Requests per minute <span class="muted small">(optional)</span></label>
        <input id={id('rpm')} type="text" inputMode="numeric" value={rpm} autoComplete="off"
          aria-invalid={problems.rpm ? 'true' : undefined} aria-describedby={described('rpm')} onInput={(e) => setRpm((e.target as HTMLInputElement).value)} />
        {problem('rpm')}
      </div>
      <div class="cap-actions">
        <button class="btn primary small" type="submit" disabled={busy}>{busy ? 'Saving…' : 'Save cap'}</button>
        <button class="btn ghost small" type="button" onClick={onCancel}>Cancel</button>
      </div>
      {error !== null && <div class="cap-error"><Alert error={error} /></div>}
    </form>
  );
}
