// The Kiln console: sign in with an API key (or SSO, session.tsx), then its sections over the public REST API (Admin only for admins).

import { render, type ComponentChildren } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { errorText, makeClient, storedKey, storeKey, type KilnClient } from './api.ts';
import { Admin } from './admin.tsx';
import { Batches } from './batches.tsx';
import { EndUsers } from './endusers.tsx';
import { Generations } from './generations.tsx';
import { Keys } from './keys.tsx';
import { Models } from './models.tsx';
import { Overview } from './overview.tsx';
import { Playground } from './playground.tsx';
import { SessionControls, SsoSignIn, useSession } from './session.tsx';
import { Webhooks } from './webhooks.tsx';
import { Workflows } from './workflows.tsx';
import { defaultRoute, go, isAdmin, useMe, useRoute } from './ui.tsx';

const SECTIONS = [
  { path: 'overview', name: 'Overview', icon: 'M3 13h4v8H3zM10 3h4v18h-4zM17 9h4v12h-4z' },
  { path: 'end-users', name: 'End users', icon: 'M9 11a3.5 3.5 0 1 0 0-.1M3 20v-.5a6 6 0 0 1 12 0v.5M16 4.3a3.5 3.5 0 0 1 0 6.6M21 20v-.5a6 6 0 0 0-3.5-5.4' },
  { path: 'generations', name: 'Generations', icon: 'M4 4h7v7H4zM13 4h7v7h-7zM4 13h7v7H4zM13 13h7v7h-7z' },
  { path: 'batches', name: 'Batches', icon: 'M12 3l9 4.5-9 4.5-9-4.5zM3 12l9 4.5 9-4.5M3 16.5l9 4.5 9-4.5' },
  { path: 'playground', name: 'Playground', icon: 'M12 3l2.6 5.8L21 9.6l-4.8 4.3 1.3 6.3L12 17l-5.5 3.2 1.3-6.3L3 9.6l6.4-.8z' },
  { path: 'workflows', name: 'Workflows', icon: 'M5 5a2 2 0 1 0 0 .1M19 12a2 2 0 1 0 0 .1M5 19a2 2 0 1 0 0 .1M7 5h4l4 7M7 19h4l4-7' },
  { path: 'webhooks', name: 'Webhooks', icon: 'M9 15a4 4 0 1 1 3-6.6M15 9a4 4 0 1 1-3 6.6M9 15h6' },
  { path: 'models', name: 'Models', icon: 'M12 3l8 4.5v9L12 21l-8-4.5v-9zM12 12l8-4.5M12 12v9M12 12L4 7.5' },
  { path: 'keys', name: 'Keys', icon: 'M14 10a4 4 0 1 0-3.9 4.9L8 17v3H5v-3l5.1-5.1M14 10h.01' },
  // Shown only to admins (GET /me says so).
  { path: 'admin', name: 'Admin', icon: 'M12 3l7 3v6c0 4.4-3 7.7-7 9-4-1.3-7-4.6-7-9V6z' },
] as const;

function Logo() {
  return (
    <svg class="logo" viewBox="0 0 32 32" aria-hidden="true">
      <rect width="32" height="32" rx="8" />
      <path d="M9 24V8h3.4v6.6L18.3 8h4.1l-6.2 6.9L22.8 24h-4.2l-4.7-6.6-1.5 1.6V24z" />
    </svg>
  );
}

const FIT_STEPS = ['compact', 'tight', 'snug', 'stack'] as const;

/**
 * Keeps the header on one line wider than a phone: from the full header, each step (no nav
 * icons, narrower links, narrower still, the nav on a row of its own) is taken only while the content is wider
 * than the header (style.css, "the header is one line"). Phones have their own layout.
 */
function fitHeader(header: HTMLElement): void {
  for (const step of FIT_STEPS) header.removeAttribute(`data-${step}`);
  if (matchMedia('(max-width: 760px)').matches) return;
  const fits = () => {
    const css = getComputedStyle(header);
    const parts = [...header.children].filter((c): c is HTMLElement => c instanceof HTMLElement && c.offsetParent !== null);
    // The nav may shrink (its links would then wrap or spill): its links' own width counts.
    const widths = parts.map((c) => (c.matches('.nav') ? c.firstElementChild?.scrollWidth ?? c.scrollWidth : c.offsetWidth));
    const need = widths.reduce((a, b) => a + b, 0) + parseFloat(css.columnGap || '0') * (parts.length - 1) + parseFloat(css.paddingLeft) + parseFloat(css.paddingRight);
    return need <= header.clientWidth;
  };
  for (const step of FIT_STEPS) {
    if (fits()) return;
    header.setAttribute(`data-${step}`, '');
  }
}

function SignIn({ onKey }: { onKey: (key: string) => void }) {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    const k = key.trim();
    if (!k) {
      setError('Enter an API key (kiln_live_…).');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      // GET /usage answers for any valid key: the cheapest way to check one.
      await makeClient(k).usage.get();
      storeKey(k);
      onKey(k);
    } catch (err) {
      setError(`Sign-in failed: ${errorText(err)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <form class="card signin-card" onSubmit={submit} noValidate>
        <div class="brand big"><Logo /><span>Kiln</span></div>
        <h1>Sign in to the console</h1>
        <SsoSignIn />
        <p class="muted">Use an API key from <code>kiln key create</code> (or the one <code>npm start</code> printed). It stays in this tab's session storage and is sent only to this server.</p>
        <label for="api-key">API key</label>
        <input id="api-key" class="masked" type="text" autoComplete="off" spellcheck={false} autoCapitalize="off" placeholder="kiln_live_…"
          value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} aria-describedby={error ? 'signin-error' : undefined} />
        {error && <div id="signin-error" class="notice error" role="alert">{error}</div>}
        <button class="btn primary" type="submit" disabled={busy}>{busy ? 'Checking…' : 'Sign in'}</button>
        <p class="muted small">The API reference is at <a href="/docs">/docs</a>.</p>
      </form>
    </main>
  );
}

function Shell({ client, onSignOut, account }: { client: KilnClient; onSignOut: () => void; account?: ComponentChildren }) {
  const route = useRoute();
  const me = useMe(client);
  const admin = isAdmin(me);
  const sections = SECTIONS.filter((s) => s.path !== 'admin' || admin);
  // While the admin check is out, a link to #/admin waits for it rather than showing the overview.
  const section: { path: string } = sections.find((s) => s.path === route[0]) ?? (route[0] === 'admin' && admin === null ? { path: 'pending' } : SECTIONS[0]);
  const mainRef = useRef<HTMLElement>(null);
  const headerRef = useRef<HTMLElement>(null);
  // Fitted again whenever the header, its links or its end change size (the Admin link, a workspace's name).
  useLayoutEffect(() => {
    const header = headerRef.current;
    if (!header) return;
    fitHeader(header);
    // In the next frame (before it is painted), not inside the observer's delivery: the fit
    // itself resizes what is observed, which would be reported again in the same frame.
    let frame = 0;
    const ro = new ResizeObserver(() => {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(() => fitHeader(header));
    });
    ro.observe(header);
    for (const part of header.querySelectorAll('.nav ul, .topbar-end')) ro.observe(part);
    return () => {
      cancelAnimationFrame(frame);
      ro.disconnect();
    };
  }, [sections.length]);
  useEffect(() => {
    if (!route[0]) defaultRoute('', 'overview');
  }, [route[0]]);
  // Move focus to the new section's heading, so keyboard and screen reader users land there.
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    mainRef.current?.querySelector<HTMLElement>('h1')?.focus();
  }, [section.path]);
  return (
    <div class="shell">
      <a class="skip" href="#main" onClick={(e) => { e.preventDefault(); mainRef.current?.querySelector<HTMLElement>('h1')?.focus(); }}>Skip to content</a>
      <header class="topbar" ref={headerRef}>
        <a class="brand" href="#/overview" aria-label="Kiln console home"><Logo /><span>Kiln</span></a>
        <nav aria-label="Sections" class="nav">
          <ul>
            {sections.map((s) => (
              <li key={s.path}>
                <a href={`#/${s.path}`} aria-current={s.path === section.path ? 'page' : undefined}>
                  <svg viewBox="0 0 24 24" aria-hidden="true"><path d={s.icon} /></svg>
                  {s.name}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="topbar-end">
          <a class="docs-link" href="/docs">API docs</a>
          {account ?? <button type="button" class="btn ghost small" onClick={onSignOut}>Sign out</button>}
        </div>
      </header>
      <main id="main" ref={mainRef} class="content">
        {section.path === 'overview' && <Overview client={client} />}
        {section.path === 'end-users' && <EndUsers client={client} me={me} />}
        {section.path === 'generations' && <Generations client={client} id={route[1]} />}
        {section.path === 'batches' && <Batches client={client} id={route[1]} />}
        {section.path === 'playground' && <Playground client={client} />}
        {section.path === 'workflows' && <Workflows client={client} workflowId={route[1]} runId={route[2] === 'runs' ? route[3] : undefined} edit={route[2] === 'edit'} />}
        {section.path === 'webhooks' && <Webhooks client={client} />}
        {section.path === 'models' && <Models client={client} />}
        {section.path === 'keys' && <Keys client={client} me={me} />}
        {section.path === 'admin' && <Admin client={client} route={route.slice(1)} />}
      </main>
    </div>
  );
}

function App() {
  const [key, setKey] = useState<string | null>(storedKey);
  const [session, setSession] = useSession(!key);
  const sso = session.state === 'active' ? session.info : null;
  // A session that ends (idle, revoked) answers 401: back to the sign-in page.
  const client = useMemo(() => (key ? makeClient(key) : sso ? makeClient(null, () => setSession({ state: 'none' })) : null), [key, !!sso]);
  if (session.state === 'checking') return <main class="boot"><p>Loading the Kiln console…</p></main>;
  if (!client) return <SignIn onKey={setKey} />;
  const signOut = () => {
    storeKey(null);
    setKey(null);
    setSession({ state: 'none' });
    go('overview');
  };
  // A workspace switch remounts the sections, so each reloads in the new scope.
  return <Shell key={sso ? sso.workspaceId ?? 'personal' : 'key'} client={client} onSignOut={signOut}
    account={sso && <SessionControls client={client} info={sso} onChange={(info) => setSession({ state: 'active', info })} onSignOut={signOut} />} />;
}

const root = document.getElementById('app')!;
root.textContent = '';
render(<App />, root);
