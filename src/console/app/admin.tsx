// Admin: the operator's view over /api/v1/admin, shown only to admins (GET /me says so: see
// useMe in ui.tsx). Accounts by spend this period (search, next page), an account's
// page (tier, budget, revoke its keys), workspaces and members, the whole catalog (enable/disable,
// upstream cost, markup, batch markup and billed price) and health.

import { useEffect, useState } from 'preact/hooks';
import { money, when, whenMinute, type KilnClient } from './api.ts';
import { dollarsToMicros, keyStatus } from './keys.tsx';
import { Alert, defaultRoute, Empty, Loading, Section, Status, useLoad } from './ui.tsx';

const TIERS = ['legacy_free', 'pro', 'enterprise', 'blocked'] as const;
const TABS = [
  { path: 'accounts', name: 'Accounts' },
  { path: 'workspaces', name: 'Workspaces' },
  { path: 'models', name: 'Models' },
  { path: 'health', name: 'Health' },
] as const;

function Tabs({ current }: { current: string }) {
  return (
    <nav class="tabs" aria-label="Admin">
      {TABS.map((t) => (
        <a key={t.path} href={`#/admin/${t.path}`} aria-current={t.path === current ? 'page' : undefined}>{t.name}</a>
      ))}
    </nav>
  );
}

function Accounts({ client }: { client: KilnClient }) {
  const [q, setQ] = useState('');
  const [query, setQuery] = useState<string | null>(null);
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  // The page remembers the search it answers: the previous page stays up until the next arrives.
  const [load] = useLoad(async (signal) => ({
    query,
    ...(await client.admin.accounts.list({ limit: '25', ...(cursor ? { cursor } : {}), ...(query ? { q: query } : {}) }, { signal })),
  }), [client, cursor, query]);
  const [error, setError] = useState<string | null>(null);
  const search = (e: Event) => {
    e.preventDefault();
    const t = q.trim();
    if (t && t.length < 3) return setError('Search with at least 3 characters of the email.');
    setError(null);
    setCursors([]);
    setQuery(t || null);
  };
  return (
    <>
      <form class="row search" role="search" onSubmit={search}>
        <label for="account-q" class="sr-only">Search accounts by email</label>
        <input id="account-q" type="search" placeholder="Search by email (3+ characters)" value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} />
        <button class="btn small" type="submit">Search</button>
        {query && <button class="btn ghost small" type="button" onClick={() => { setQ(''); setQuery(null); setCursors([]); }}>Clear</button>}
      </form>
      {error && <p class="notice error" role="alert">{error}</p>}
      {load.state === 'loading' && <Loading what="accounts" />}
      {load.state === 'error' && <Alert error={load.error} />}
      {load.state === 'ok' && load.value.data.length === 0 && <Empty title={load.value.query ? `No account matches “${load.value.query}”` : 'No accounts'} />}
      {load.state === 'ok' && load.value.data.length > 0 && (
        <div class="table-card">
          <table class="table admin-table accounts">
            <caption class="sr-only">Accounts, most spent this period first{load.value.query ? `, matching ${load.value.query}` : ''}</caption>
            <thead><tr><th scope="col">Email</th><th scope="col">Tier</th><th scope="col">Budget</th><th scope="col">Used this period</th><th scope="col">Keys</th></tr></thead>
            <tbody>
              {load.value.data.map((a) => (
                <tr key={a.id} data-account-id={a.id}>
                  <th scope="row"><a href={`#/admin/accounts/${a.id}`}>{a.email}</a>{a.admin && <span class="badge"> admin</span>}</th>
                  <td><span class={`badge tier-${a.tier}`}>{a.tier.replace('_', ' ')}</span></td>
                  <td class="nowrap">{a.budgetMicros == null ? 'Unlimited' : money(a.budgetMicros)}</td>
                  <td class="nowrap">{money(a.usedMicros)}</td>
                  <td>{a.keyCount}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div class="row pager">
        {cursors.length > 0 && <button type="button" class="btn ghost small" onClick={() => setCursors([])}>First page</button>}
        {load.state === 'ok' && load.value.nextCursor && (
          <button type="button" class="btn small" onClick={() => setCursors([...cursors, load.value.nextCursor!])}>Next page</button>
        )}
      </div>
    </>
  );
}

function Account({ client, id }: { client: KilnClient; id: string }) {
  const [load, reload, set] = useLoad((signal) => client.admin.accounts.get(id, { signal }), [client, id]);
  const [tier, setTier] = useState('');
  const [budget, setBudget] = useState('');
  const [msg, setMsg] = useState<{ text?: string; error?: unknown }>({});
  const [confirm, setConfirm] = useState(false);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (load.state !== 'ok') return;
    setTier(load.value.tier);
    setBudget(load.value.budgetMicros == null ? '' : String(load.value.budgetMicros / 1_000_000));
  }, [load.state === 'ok' ? load.value : null]);
  if (load.state === 'loading') return <Loading what="the account" />;
  if (load.state === 'error') return <Alert error={load.error} />;
  const a = load.value;
  const save = async (e: Event) => {
    e.preventDefault();
    const micros = dollarsToMicros(budget);
    if (Number.isNaN(micros)) return setMsg({ error: new Error('Budget: enter an amount in dollars, or leave it empty for unlimited.') });
    setBusy(true);
    setMsg({});
    try {
      set(await client.admin.accounts.update(id, { tier: tier as (typeof TIERS)[number], budgetMicros: micros ?? null }));
      setMsg({ text: 'Saved. The change is in the account\'s audit log under your name.' });
    } catch (error) {
      setMsg({ error });
    } finally {
      setBusy(false);
    }
  };
  const revokeAll = async () => {
    setBusy(true);
    setMsg({});
    try {
      const r = await client.admin.accounts.revokeKeys(id);
      set(r.account);
      setConfirm(false);
      setMsg({ text: `Revoked ${r.revoked} key${r.revoked === 1 ? '' : 's'}.` });
    } catch (error) {
      setMsg({ error });
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <p><a href="#/admin/accounts">← All accounts</a></p>
      <div class="card">
        <h2 class="page-title">{a.email}{a.admin && <span class="badge"> admin</span>}</h2>
        <dl class="facts">
          <div><dt>Tier</dt><dd>{a.tier.replace('_', ' ')}</dd></div>
          <div><dt>Budget</dt><dd>{a.budgetMicros == null ? 'Unlimited' : money(a.budgetMicros)}</dd></div>
          <div><dt>Used this period</dt><dd>{money(a.usedMicros)}</dd></div>
          <div><dt>Resets</dt><dd>{whenMinute(a.resetsAt)}</dd></div>
          <div><dt>Live keys</dt><dd>{a.keyCount}</dd></div>
          <div><dt>Since</dt><dd>{whenMinute(a.createdAt)}</dd></div>
        </dl>
      </div>
      <form class="card form" onSubmit={save} aria-labelledby="account-plan-title">
        <h2 class="card-title" id="account-plan-title">Tier and budget</h2>
        <div class="field-row">
          <div class="field">
            <label for="account-tier">Tier</label>
            <select id="account-tier" value={tier} onChange={(e) => setTier((e.target as HTMLSelectElement).value)}>
              {TIERS.map((t) => <option key={t} value={t}>{t.replace('_', ' ')}</option>)}
            </select>
          </div>
          <div class="field">
            <label for="account-budget">Budget per period, $ <span class="muted small">(empty = unlimited)</span></label>
            <input id="account-budget" type="text" inputMode="decimal" value={budget} onInput={(e) => setBudget((e.target as HTMLInputElement).value)} />
          </div>
        </div>
        <div class="row"><button class="btn primary" type="submit" disabled={busy}>Save</button></div>
      </form>
      {msg.text && <p class="notice ok" role="status">{msg.text}</p>}
      {msg.error !== undefined && <Alert error={msg.error} />}
      <div class="card">
        <div class="row spread">
          <h2 class="card-title">Keys</h2>
          {a.keyCount > 0 && !confirm && <button type="button" class="btn danger small" onClick={() => setConfirm(true)}>Revoke all keys</button>}
        </div>
        {confirm && (
          <div class="row notice" role="group" aria-label="Confirm revoking every key">
            <span>Revoke all {a.keyCount} live key{a.keyCount === 1 ? '' : 's'} of {a.email}? Their requests get 401 at once.</span>
            <button type="button" class="btn danger small" disabled={busy} onClick={revokeAll}>Revoke {a.keyCount} key{a.keyCount === 1 ? '' : 's'}</button>
            <button type="button" class="btn ghost small" onClick={() => setConfirm(false)}>Cancel</button>
          </div>
        )}
        {a.keys.length === 0 ? <p class="muted">No keys.</p> : (
          <div class="table-card">
            <table class="table admin-table">
              <caption class="sr-only">Keys of {a.email}</caption>
              <thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Scopes</th><th scope="col">Last used</th><th scope="col">Status</th></tr></thead>
              <tbody>
                {a.keys.map((k) => (
                  <tr key={k.id}>
                    <th scope="row">{k.name || <span class="muted">(unnamed)</span>}</th>
                    <td><code>{k.prefix}…</code></td>
                    <td>{k.scopes.join(', ')}</td>
                    <td class="nowrap">{whenMinute(k.lastUsedAt)}</td>
                    <td><Status status={keyStatus(k)} /></td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <button type="button" class="btn ghost small" onClick={reload}>Refresh</button>
      </div>
      {a.workspaces.length > 0 && (
        <div class="card">
          <h2 class="card-title">Workspaces</h2>
          <ul>{a.workspaces.map((w) => <li key={w.id}><a href={`#/admin/workspaces/${w.id}`}>{w.name}</a> ({w.role})</li>)}</ul>
        </div>
      )}
    </>
  );
}

function Workspaces({ client }: { client: KilnClient }) {
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const [load] = useLoad((signal) => client.admin.workspaces.list({ limit: '25', ...(cursor ? { cursor } : {}) }, { signal }), [client, cursor]);
  return (
    <>
      {load.state === 'loading' && <Loading what="workspaces" />}
      {load.state === 'error' && <Alert error={load.error} />}
      {load.state === 'ok' && load.value.data.length === 0 && <Empty title="No workspaces" />}
      {load.state === 'ok' && load.value.data.length > 0 && (
        <div class="table-card">
          <table class="table admin-table">
            <caption class="sr-only">Workspaces</caption>
            <thead><tr><th scope="col">Name</th><th scope="col">Owner</th><th scope="col">Plan</th><th scope="col">Budget</th><th scope="col">Used this period</th><th scope="col">Members</th></tr></thead>
            <tbody>
              {load.value.data.map((w) => (
                <tr key={w.id}>
                  <th scope="row"><a href={`#/admin/workspaces/${w.id}`}>{w.name}</a></th>
                  <td>{w.ownerEmail ?? '—'}</td>
                  <td><Status status={w.planStatus} /></td>
                  <td class="nowrap">{w.budgetMicros == null ? 'Unlimited' : money(w.budgetMicros)}</td>
                  <td class="nowrap">{money(w.usedMicros)}</td>
                  <td>{w.memberCount}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div class="row pager">
        {cursors.length > 0 && <button type="button" class="btn ghost small" onClick={() => setCursors([])}>First page</button>}
        {load.state === 'ok' && load.value.nextCursor && <button type="button" class="btn small" onClick={() => setCursors([...cursors, load.value.nextCursor!])}>Next page</button>}
      </div>
    </>
  );
}

function Workspace({ client, id }: { client: KilnClient; id: string }) {
  const [load] = useLoad((signal) => client.admin.workspaces.get(id, { signal }), [client, id]);
  if (load.state === 'loading') return <Loading what="the workspace" />;
  if (load.state === 'error') return <Alert error={load.error} />;
  const w = load.value;
  return (
    <>
      <p><a href="#/admin/workspaces">← All workspaces</a></p>
      <div class="card">
        <h2 class="page-title">{w.name}</h2>
        <dl class="facts">
          <div><dt>Plan</dt><dd>{w.planStatus}</dd></div>
          <div><dt>Budget</dt><dd>{w.budgetMicros == null ? 'Unlimited' : money(w.budgetMicros)}</dd></div>
          <div><dt>Used this period</dt><dd>{money(w.usedMicros)}</dd></div>
          <div><dt>Members</dt><dd>{w.memberCount}</dd></div>
        </dl>
      </div>
      <div class="table-card">
        <table class="table admin-table">
          <caption class="sr-only">Members of {w.name}</caption>
          <thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Joined</th><th scope="col">Left</th></tr></thead>
          <tbody>
            {w.members.map((m) => (
              <tr key={m.accountId}>
                <th scope="row"><a href={`#/admin/accounts/${m.accountId}`}>{m.email}</a></th>
                <td>{m.role}</td>
                <td class="nowrap">{whenMinute(m.joinedAt)}</td>
                <td class="nowrap">{whenMinute(m.leftAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** A price table (microdollars per unit) as short text: "$0.04 / image · $2.00 / 1M output tokens" (tokens by the million). */
function prices(p: Record<string, number> | null): string {
  if (!p) return '—';
  const unit: Record<string, [string, number]> = {
    micros_per_image: ['image', 1], micros_per_second: ['second', 1],
    input_micros_per_token: ['1M input tokens', 1e6], output_micros_per_token: ['1M output tokens', 1e6],
  };
  return Object.entries(p).map(([k, v]) => {
    const [u, times] = unit[k] ?? [k, 1];
    return `${money(Math.round(v * times))} / ${u}`;
  }).join(' · ');
}

/** What an entry bills batch lines at (its `batchMarkup`: docs/providers.md, "Model catalog"). */
function BatchMarkupCell({ m }: { m: { batchMarkup: number | null; batchPricing: Record<string, number> | null } }) {
  if (m.batchMarkup === null) return <td class="muted small" data-batch-markup="none">as markup</td>;
  return <td data-batch-markup={m.batchMarkup}>×{m.batchMarkup}{m.batchPricing && <><br /><span class="muted small">billed {prices(m.batchPricing)}</span></>}</td>;
}

function Models({ client }: { client: KilnClient }) {
  const [load, reload] = useLoad((signal) => client.admin.models.list({ signal }), [client]);
  const [error, setError] = useState<unknown>(null);
  const toggle = async (id: string, enabled: boolean) => {
    setError(null);
    try {
      await client.admin.models.update(id, { enabled });
      reload();
    } catch (err) {
      setError(err);
    }
  };
  return (
    <>
      {error !== null && <Alert error={error} />}
      {load.state === 'loading' && <Loading what="the catalog" />}
      {load.state === 'error' && <Alert error={load.error} />}
      {load.state === 'ok' && (
        <div class="table-card">
          <table class="table admin-table">
            <caption class="sr-only">The whole catalog, disabled entries included</caption>
            <thead><tr><th scope="col">Model</th><th scope="col">Provider</th><th scope="col">Upstream cost</th><th scope="col">Billed price</th><th scope="col">Markup</th><th scope="col">Batch markup</th><th scope="col">Status</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {load.value.data.map((m) => (
                <tr key={m.id} data-model-id={m.id}>
                  <th scope="row">{m.name}<br /><code class="small">{m.id}</code></th>
                  <td>{m.provider}</td>
                  <td>{prices(m.cost)}</td>
                  <td>{prices(m.pricing)}</td>
                  <td>×{m.markup}</td>
                  <BatchMarkupCell m={m} />
                  <td><Status status={m.enabled ? 'enabled' : 'disabled'} /></td>
                  <td><button type="button" class={`btn small ${m.enabled ? 'danger' : ''}`} aria-label={`${m.enabled ? 'Disable' : 'Enable'} ${m.id}`}
                    onClick={() => toggle(m.id, !m.enabled)}>{m.enabled ? 'Disable' : 'Enable'}</button></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

function Health({ client }: { client: KilnClient }) {
  const [load, reload] = useLoad((signal) => client.admin.health({ signal }), [client]);
  if (load.state === 'loading') return <Loading what="health" />;
  if (load.state === 'error') return <Alert error={load.error} />;
  const h = load.value;
  return (
    <>
      <div class="row spread"><p class="muted">Read {when(new Date().toISOString())}.</p><button type="button" class="btn ghost small" onClick={reload}>Refresh</button></div>
      <div class="card">
        <h2 class="card-title">Job queue</h2>
        <dl class="facts">
          <div><dt>Ready</dt><dd>{h.queue.ready}</dd></div>
          <div><dt>Running</dt><dd>{h.queue.running}</dd></div>
          <div><dt>Scheduled</dt><dd>{h.queue.scheduled}</dd></div>
          <div><dt>Oldest ready waits</dt><dd>{h.queue.oldestReadySeconds == null ? '—' : `${h.queue.oldestReadySeconds} s`}</dd></div>
        </dl>
      </div>
      <div class="card">
        <h2 class="card-title">Webhook backlog</h2>
        <dl class="facts">
          <div><dt>Pending</dt><dd>{h.webhooks.pending}</dd></div>
          <div><dt>Due now</dt><dd>{h.webhooks.due}</dd></div>
          <div><dt>Oldest due since</dt><dd>{whenMinute(h.webhooks.oldestDueAt)}</dd></div>
        </dl>
      </div>
      <div class="card">
        <h2 class="card-title">Upstream providers</h2>
        {h.providers.length === 0 ? <p class="muted">No network models in the catalog (only local ones).</p> : (
          <div class="table-card">
            <table class="table admin-table">
              <caption class="sr-only">Upstream health per catalog entry</caption>
              <thead><tr><th scope="col">Model</th><th scope="col">State</th><th scope="col">Calls / failures (15 min)</th><th scope="col">Last error</th><th scope="col">Last success</th></tr></thead>
              <tbody>
                {h.providers.map((p) => (
                  <tr key={p.modelId}>
                    <th scope="row"><code>{p.modelId}</code></th>
                    <td><Status status={p.state} /></td>
                    <td>{p.calls15m} / {p.failures15m}</td>
                    <td>{p.lastError ? `${p.lastError} (${whenMinute(p.lastErrorAt)})` : '—'}</td>
                    <td class="nowrap">{whenMinute(p.lastSuccessAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </div>
    </>
  );
}

export function Admin({ client, route }: { client: KilnClient; route: string[] }) {
  const tab = TABS.find((t) => t.path === route[0])?.path ?? 'accounts';
  useEffect(() => {
    if (!route[0]) defaultRoute('admin', 'admin/accounts');
  }, [route[0]]);
  return (
    <Section title="Admin" intro="The operator's view. Every change here is written to the audit log under your name.">
      <Tabs current={tab} />
      {tab === 'accounts' && (route[1] ? <Account client={client} id={route[1]} /> : <Accounts client={client} />)}
      {tab === 'workspaces' && (route[1] ? <Workspace client={client} id={route[1]} /> : <Workspaces client={client} />)}
      {tab === 'models' && <Models client={client} />}
      {tab === 'health' && <Health client={client} />}
    </Section>
  );
}
