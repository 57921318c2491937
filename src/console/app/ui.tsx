// Small shared pieces of the console: hash routing, async loading state, status badges, notices.

import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { errorText, type KilnClient } from './api.ts';

/** The route is the URL's hash (`#/generations/<id>`): no server routes, nothing secret in it. */
export function useRoute(): string[] {
  const read = () => location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  const [parts, setParts] = useState(read);
  useEffect(() => {
    const on = () => setParts(read());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return parts;
}

/**
 * Names the default route in the address bar (`#/overview`) without a navigation, but only while
 * the hash is still `from`: effects run after paint, and by then a link or a typed address may
 * have moved on, which a late replace would overwrite (the new section never showing).
 */
export function defaultRoute(from: string, to: string): void {
  if (location.hash.replace(/^#\/?/, '').replace(/\/+$/, '') === from) history.replaceState(null, '', `#/${to}`);
}

export function go(path: string): void {
  location.hash = `#/${path}`;
}

export type Load<T> = { state: 'loading' } | { state: 'ok'; value: T } | { state: 'error'; error: unknown };

/** Runs `fn` when `deps` change; `reload()` runs it again. Aborted on unmount or re-run. */
export function useLoad<T>(fn: (signal: AbortSignal) => Promise<T>, deps: unknown[]): [Load<T>, () => void, (v: T) => void] {
  const [load, setLoad] = useState<Load<T>>({ state: 'loading' });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const ac = new AbortController();
    fn(ac.signal).then(
      (value) => !ac.signal.aborted && setLoad({ state: 'ok', value }),
      (error) => !ac.signal.aborted && setLoad({ state: 'error', error }),
    );
    return () => ac.abort();
  }, [...deps, tick]);
  return [load, () => setTick((t) => t + 1), (value: T) => setLoad({ state: 'ok', value })];
}

export type Me = Awaited<ReturnType<KilnClient['me']>>;

/**
 * GET /me, once per client: who the key or session is, the scopes it carries now and whether its
 * user is an admin (docs/api.md, "Who am I"). The console asks this rather than probing a route
 * it may not call, which the browser would log as a failed request.
 */
export function useMe(client: KilnClient): Load<Me> {
  return useLoad((signal) => client.me({ signal }), [client])[0];
}

/** Whether `me` may use the admin routes (an admin, with the `admin` scope): null while asking. */
export function isAdmin(me: Load<Me>): boolean | null {
  if (me.state === 'loading') return null;
  return me.state === 'ok' && me.value.admin && me.value.scopes.includes('admin');
}

export function Status({ status }: { status: string }) {
  return <span class={`badge s-${status}`} data-status={status}>{status}</span>;
}

export function Alert({ error }: { error: unknown }) {
  return <div class="notice error" role="alert">{errorText(error)}</div>;
}

export function Loading({ what }: { what: string }) {
  return <p class="muted loading" role="status"><span class="spinner" aria-hidden="true" /> Loading {what}…</p>;
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <p class="empty-title">{title}</p>
      {children && <p class="muted">{children}</p>}
    </div>
  );
}

export function Section({ title, actions, children, intro }: { title: string; intro?: ComponentChildren; actions?: ComponentChildren; children: ComponentChildren }) {
  return (
    <section class="section" aria-labelledby="section-title">
      <header class="section-head">
        <div>
          <h1 id="section-title" tabIndex={-1}>{title}</h1>
          {intro && <p class="muted intro">{intro}</p>}
        </div>
        {actions && <div class="actions">{actions}</div>}
      </header>
      {children}
    </section>
  );
}

/** Copies text with the async clipboard API (available on localhost and https). */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button type="button" class="btn small ghost" onClick={() => {
      navigator.clipboard?.writeText(text).then(() => {
        setDone(true);
        setTimeout(() => setDone(false), 1500);
      }, () => {});
    }}>{done ? 'Copied' : label}</button>
  );
}
