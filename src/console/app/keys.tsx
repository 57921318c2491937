// Keys: the API keys of this key's billing scope (GET /keys), "Create key" (the secret is shown
// once), "Rotate" (a new secret under the same id, the old one kept for a grace period chosen here)
// and "Revoke" (confirmed first). Each key shows how many of its secrets work now and when the
// older one stops (docs/api.md, "Keys you manage yourself"). Needs the `keys` scope: without it
// (as GET /me tells) the section says so, without asking GET /keys for a 403.

import { useState } from 'preact/hooks';
import { KilnError, money, whenMinute, type KilnClient } from './api.ts';
import { Alert, CopyButton, Empty, Loading, Section, Status, useLoad, type Load, type Me } from './ui.tsx';
import type { Key } from '../../client/index.ts';

const SCOPES = [
  { id: 'read', hint: 'read generations, runs, usage' },
  { id: 'write', hint: 'start generations and runs (implies read)' },
  { id: 'keys', hint: 'manage this scope\'s keys and read its audit log' },
  { id: 'admin', hint: 'the admin routes (admins only)' },
] as const;

const EXPIRY = [
  { days: 0, label: 'Never' },
  { days: 7, label: 'In 7 days' },
  { days: 30, label: 'In 30 days' },
  { days: 90, label: 'In 90 days' },
  { days: 365, label: 'In a year' },
];

const GRACE = [
  { seconds: 0, label: 'None: the old secret stops now' },
  { seconds: 3600, label: '1 hour' },
  { seconds: 86_400, label: '1 day' },
  { seconds: 7 * 86_400, label: '7 days' },
];

/** A key's state as a word: revoked, expired or active. */
export function keyStatus(k: Pick<Key, 'revokedAt' | 'expiresAt'>): 'revoked' | 'expired' | 'active' {
  if (k.revokedAt) return 'revoked';
  if (k.expiresAt && new Date(k.expiresAt).getTime() <= Date.now()) return 'expired';
  return 'active';
}

/** A time to the minute, with the date only when it is not today. */
function until(iso: string): string {
  const d = new Date(iso);
  const today = d.toDateString() === new Date().toDateString();
  return today ? d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' }) : d.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

/** How many of a key's secrets work now, and until when the one a rotation replaced does ("2 secrets live, the old one until 14:05"). */
export function secretsText(k: Pick<Key, 'liveSecrets' | 'graceEndsAt'>): string {
  if (k.liveSecrets <= 0) return 'No secret works';
  if (k.liveSecrets === 1 || !k.graceEndsAt) return k.liveSecrets === 1 ? '1 secret live' : `${k.liveSecrets} secrets live`;
  return `${k.liveSecrets} secrets live, the old one until ${until(k.graceEndsAt)}`;
}

/**
 * A refused rotate or revoke: a 403 (the key has a scope this credential lacks) says what the API
 * said, as a sentence; anything else as every error is shown.
 */
function ActionError({ error, what }: { error: unknown; what: string }) {
  if (error instanceof KilnError && error.status === 403) {
    return <div class="notice error" role="alert"><strong>Not allowed to {what}.</strong> {error.message}</div>;
  }
  return <Alert error={error} />;
}

/** Dollars typed by a person → microdollars (undefined when blank; NaN when not a number). */
export function dollarsToMicros(text: string): number | undefined {
  const t = text.trim().replace(/^\$/, '');
  if (!t) return undefined;
  if (!/^\d+(\.\d{0,6})?$/.test(t)) return NaN;
  return Math.round(Number(t) * 1_000_000);
}

/** A secret shown once, with a copy button. */
export function SecretOnce({ title, secret, onDone }: { title: string; secret: string; onDone: () => void }) {
  return (
    <div class="card secret" role="region" aria-label="New secret">
      <h2 class="card-title">{title}</h2>
      <p>Store it now: it is shown only this once. Kiln keeps only its hash.</p>
      <div class="row"><code class="wrap" data-secret>{secret}</code><CopyButton text={secret} label="Copy secret" /></div>
      <button type="button" class="btn ghost small" onClick={onDone}>I stored it</button>
    </div>
  );
}

function CreateKey({ client, onCreated }: { client: KilnClient; onCreated: (k: Key & { key: string }) => void }) {
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>(['read', 'write']);
  const [rpm, setRpm] = useState('');
  const [budget, setBudget] = useState('');
  const [expiry, setExpiry] = useState(0);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    const budgetMicros = dollarsToMicros(budget);
    if (Number.isNaN(budgetMicros)) return setError(new Error('Budget: enter an amount in dollars, such as 5 or 0.25.'));
    if (rpm.trim() && !/^\d+$/.test(rpm.trim())) return setError(new Error('Requests per minute: enter a whole number.'));
    if (!scopes.length) return setError(new Error('Choose at least one scope.'));
    setBusy(true);
    try {
      const created = await client.keys.create({
        name: name.trim() || 'Console key',
        scopes: scopes as Key['scopes'],
        ...(rpm.trim() ? { rpm: Number(rpm) } : {}),
        ...(budgetMicros !== undefined ? { budgetMicros } : {}),
        ...(expiry ? { expiresAt: new Date(Date.now() + expiry * 86_400_000).toISOString() } : {}),
      });
      setName('');
      setRpm('');
      setBudget('');
      onCreated(created);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const toggle = (s: string) => setScopes((cur) => (cur.includes(s) ? cur.filter((x) => x !== s) : [...cur, s]));
  return (
    <form class="card form" onSubmit={submit} aria-labelledby="create-key-title">
      <h2 class="card-title" id="create-key-title">Create key</h2>
      <div class="field-row">
        <div class="field grow">
          <label for="key-name">Name</label>
          <input id="key-name" type="text" maxLength={200} placeholder="CI deploys" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </div>
        <div class="field">
          <label for="key-expiry">Expires</label>
          <select id="key-expiry" value={String(expiry)} onChange={(e) => setExpiry(Number((e.target as HTMLSelectElement).value))}>
            {EXPIRY.map((x) => <option key={x.days} value={String(x.days)}>{x.label}</option>)}
          </select>
        </div>
      </div>
      <fieldset class="field checks">
        <legend>Scopes</legend>
        {SCOPES.map((s) => (
          <label key={s.id} class="check">
            <input type="checkbox" checked={scopes.includes(s.id)} onChange={() => toggle(s.id)} />
            <span><code>{s.id}</code> <span class="muted small">{s.hint}</span></span>
          </label>
        ))}
      </fieldset>
      <div class="field-row">
        <div class="field">
          <label for="key-rpm">Requests per minute <span class="muted small">(optional)</span></label>
          <input id="key-rpm" type="text" inputMode="numeric" value={rpm} onInput={(e) => setRpm((e.target as HTMLInputElement).value)} />
        </div>
        <div class="field">
          <label for="key-budget">Budget per period, $ <span class="muted small">(optional)</span></label>
          <input id="key-budget" type="text" inputMode="decimal" placeholder="e.g. 5" value={budget} onInput={(e) => setBudget((e.target as HTMLInputElement).value)} />
        </div>
      </div>
      {error !== null && <Alert error={error} />}
      <div class="row"><button class="btn primary" type="submit" disabled={busy}>{busy ? 'Creating…' : 'Create key'}</button></div>
    </form>
  );
}

function KeyRow({ client, k, onSecret, onChanged }: { client: KilnClient; k: Key; onSecret: (title: string, secret: string) => void; onChanged: () => void }) {
  const [mode, setMode] = useState<'idle' | 'rotate' | 'revoke'>('idle');
  const [grace, setGrace] = useState(86_400);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const status = keyStatus(k);
  const label = k.name || k.prefix;
  const act = async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
      setMode('idle');
      onChanged();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <tr data-key-id={k.id}>
        <th scope="row">{k.name || <span class="muted">(unnamed)</span>}</th>
        <td class="nowrap"><code>{k.prefix}…</code></td>
        <td>{k.scopes.join(', ')}</td>
        <td class="nowrap">{k.budgetMicros == null ? `${money(k.usedMicros)} used` : `${money(k.usedMicros)} of ${money(k.budgetMicros)}`}</td>
        <td class="nowrap">{whenMinute(k.lastUsedAt)}</td>
        <td class="nowrap">{k.expiresAt ? whenMinute(k.expiresAt) : 'Never'}</td>
        <td>
          <Status status={status} />
          {status === 'active' && <span class="key-secrets muted small" title={k.graceEndsAt ? `The old secret stops at ${new Date(k.graceEndsAt).toLocaleString()}` : undefined}>{secretsText(k)}</span>}
        </td>
        <td class="nowrap">
          {status === 'active' && (
            <div class="actions">
              <button type="button" class="btn ghost small" aria-label={`Rotate ${label}`} aria-expanded={mode === 'rotate'} onClick={() => setMode(mode === 'rotate' ? 'idle' : 'rotate')}>Rotate</button>
              <button type="button" class="btn danger small" aria-label={`Revoke ${label}`} aria-expanded={mode === 'revoke'} onClick={() => setMode(mode === 'revoke' ? 'idle' : 'revoke')}>Revoke</button>
            </div>
          )}
        </td>
      </tr>
      {mode !== 'idle' && (
        <tr class="row-panel">
          <td colSpan={8}>
            {mode === 'rotate' && (
              <div class="row">
                <label for={`grace-${k.id}`}>Keep the old secret working for</label>
                <select id={`grace-${k.id}`} value={String(grace)} onChange={(e) => setGrace(Number((e.target as HTMLSelectElement).value))}>
                  {GRACE.map((g) => <option key={g.seconds} value={String(g.seconds)}>{g.label}</option>)}
                </select>
                <button type="button" class="btn primary small" disabled={busy} onClick={() => act(async () => {
                  const r = await client.keys.rotate(k.id, { graceSeconds: grace });
                  onSecret(`New secret for ${label}`, r.key);
                })}>Rotate key</button>
                <button type="button" class="btn ghost small" onClick={() => setMode('idle')}>Cancel</button>
              </div>
            )}
            {mode === 'revoke' && (
              <div class="row" role="group" aria-label={`Confirm revoking ${label}`}>
                <span>Revoke <strong>{label}</strong>? Every request with it gets 401 from now on; this cannot be undone.</span>
                <button type="button" class="btn danger small" disabled={busy} onClick={() => act(async () => { await client.keys.revoke(k.id); })}>Revoke key</button>
                <button type="button" class="btn ghost small" onClick={() => setMode('idle')}>Cancel</button>
              </div>
            )}
            {error !== null && <ActionError error={error} what={`${mode} ${label}`} />}
          </td>
        </tr>
      )}
    </>
  );
}

/** The Keys section; `me` (GET /me) tells whether this credential holds the `keys` scope. */
export function Keys({ client, me }: { client: KilnClient; me: Load<Me> }) {
  const lacksScope = me.state === 'ok' && !me.value.scopes.includes('keys');
  return (
    <Section title="Keys" intro="API keys of this billing scope. A key's secret is shown once, when it is created or rotated.">
      {me.state === 'loading' && <Loading what="keys" />}
      {lacksScope && <NoKeysScope />}
      {/* GET /me unanswered: GET /keys says whether the scope is there. */}
      {me.state !== 'loading' && !lacksScope && <KeyList client={client} />}
    </Section>
  );
}

function NoKeysScope() {
  return <p class="notice info">This key cannot manage keys: it lacks the <code>keys</code> scope. Sign in with a key that has it (a console session does).</p>;
}

function KeyList({ client }: { client: KilnClient }) {
  const [load, reload] = useLoad((signal) => client.keys.list({ signal }), [client]);
  const [secret, setSecret] = useState<{ title: string; secret: string } | null>(null);
  const noScope = load.state === 'error' && load.error instanceof KilnError && load.error.status === 403;
  return (
    <>
      {load.state === 'loading' && <Loading what="keys" />}
      {noScope && <NoKeysScope />}
      {load.state === 'error' && !noScope && <Alert error={load.error} />}
      {load.state === 'ok' && (
        <>
          <CreateKey client={client} onCreated={(k) => { setSecret({ title: `Secret of ${k.name ?? 'the new key'}`, secret: k.key }); reload(); }} />
          {secret && <SecretOnce title={secret.title} secret={secret.secret} onDone={() => setSecret(null)} />}
          {load.value.data.length === 0 && <Empty title="No keys yet">Create one above.</Empty>}
          {load.value.data.length > 0 && (
            <div class="table-card">
              <table class="table admin-table keys">
                <caption class="sr-only">API keys</caption>
                <thead><tr>
                  <th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Scopes</th><th scope="col">Used / budget</th>
                  <th scope="col">Last used</th><th scope="col">Expires</th><th scope="col">Status</th><th scope="col"><span class="sr-only">Actions</span></th>
                </tr></thead>
                <tbody>
                  {load.value.data.map((k) => (
                    <KeyRow key={k.id} client={client} k={k} onChanged={reload} onSecret={(title, s) => setSecret({ title, secret: s })} />
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </>
  );
}
