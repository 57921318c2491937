// The console's single sign-on pieces: the "Sign in with SSO" link when the server offers it (the
// page's kiln-sso meta), the check for a live session at start (GET /session; the HttpOnly cookie
// is invisible to scripts), and, signed in by SSO, the header's workspace switcher and Sign out.

import { useEffect, useState } from 'preact/hooks';
import { errorText, KilnError, makeClient, type KilnClient } from './api.ts';
import type { components } from '../../client/schema.ts';

export type SessionInfo = components['schemas']['Session'];
export type SessionState = { state: 'checking' } | { state: 'none' } | { state: 'active'; info: SessionInfo };

/** Where SSO sign-in starts, when this Kiln has it configured (KILN_OIDC_ISSUER). */
export function ssoLogin(): string | null {
  return document.querySelector<HTMLMetaElement>('meta[name="kiln-sso"]')?.content || null;
}

/** The "Sign in with SSO" link of the sign-in card (nothing without SSO). */
export function SsoSignIn() {
  const href = ssoLogin();
  if (!href) return null;
  return (
    <>
      <a class="btn primary" href={href}>Sign in with SSO</a>
      <p class="or muted small"><span>or use an API key</span></p>
    </>
  );
}

/** The SSO session of this browser, checked once at start when no API key is in use. */
export function useSession(check: boolean): [SessionState, (s: SessionState) => void] {
  const [s, set] = useState<SessionState>(check && ssoLogin() ? { state: 'checking' } : { state: 'none' });
  useEffect(() => {
    if (!check || !ssoLogin()) return;
    const ac = new AbortController();
    makeClient(null).raw.GET('/session', { signal: ac.signal }).then(
      ({ data, response }) => !ac.signal.aborted && set(response.ok && data ? { state: 'active', info: data } : { state: 'none' }),
      () => !ac.signal.aborted && set({ state: 'none' }),
    );
    return () => ac.abort();
  }, [check]);
  return [s, set];
}

/** The header's end for an SSO session: who, the workspace it acts in (switchable), Sign out. */
export function SessionControls({ client, info, onChange, onSignOut }: {
  client: KilnClient; info: SessionInfo; onChange: (info: SessionInfo) => void; onSignOut: () => void;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const choose = async (value: string) => {
    setBusy(true);
    setError(null);
    try {
      const { data, error: e, response } = await client.raw.PUT('/session/workspace', { body: { workspaceId: value || null } });
      if (!response.ok || !data) throw KilnError.from(response, e);
      onChange(data);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  const signOut = async () => {
    setBusy(true);
    setError(null);
    // Same origin: the browser sends the cookie and the Origin the server checks.
    const ended = await fetch('/auth/logout', { method: 'POST' }).then((r) => r.ok, () => false);
    // Not ended on the server: say so rather than pretend (the cookie would still sign this browser in).
    if (ended) onSignOut();
    else {
      setError('Sign-out failed; try again.');
      setBusy(false);
    }
  };
  return (
    <div class="session">
      <label class="sr-only" for="workspace-switcher">Workspace</label>
      <select id="workspace-switcher" value={info.workspaceId ?? ''} disabled={busy} title={info.user.email}
        onChange={(e) => choose((e.target as HTMLSelectElement).value)} aria-describedby={error ? 'session-error' : undefined}>
        <option value="">Personal</option>
        {info.workspaces.map((w) => <option key={w.id} value={w.id}>{w.name}</option>)}
      </select>
      {error && <span id="session-error" class="notice error small" role="alert">{error}</span>}
      <button type="button" class="btn ghost small" onClick={signOut} disabled={busy} title={`Signed in as ${info.user.email}`}>Sign out</button>
    </div>
  );
}
