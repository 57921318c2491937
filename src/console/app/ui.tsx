// Small shared pieces of the console: hash routing (and holding it while there are unsaved
// changes), async loading state, status badges, notices, a confirm dialog.

import type { ComponentChildren } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { errorText, type KilnClient } from './api.ts';

/** The hash's path, before any `?`: `#/generations/<id>` → `generations/<id>`. */
function hashPath(): string {
  const h = location.hash.replace(/^#\/?/, '');
  const q = h.indexOf('?');
  return q < 0 ? h : h.slice(0, q);
}

/** The hash's query, after its first `?` (`#/generations?endUser=…`): a view's state that a link or a reload keeps. */
function hashQuery(): string {
  const q = location.hash.indexOf('?');
  return q < 0 ? '' : location.hash.slice(q + 1);
}

/**
 * The route is the URL's hash (`#/generations/<id>`): no server routes, nothing secret in it. A
 * `?query` after the path (a view's filters) is not part of the route: useHashQuery reads it.
 */
export function useRoute(): string[] {
  const read = () => hashPath().split('/').filter(Boolean).map(decodeURIComponent);
  const [parts, setParts] = useState(read);
  useEffect(() => {
    const on = () => setParts(read());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return parts;
}

/** The hash's query (`#/generations?status=failed` → `status=failed`), read again on every hash change. */
export function useHashQuery(): URLSearchParams {
  const [query, setQuery] = useState(hashQuery);
  useEffect(() => {
    const on = () => setQuery(hashQuery());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return new URLSearchParams(query);
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

/** Asks whether to leave for `to` (a hash); while set, the console's own navigations wait for the answer. */
let ask: ((to: string) => void) | null = null;

/**
 * Holds navigation within the console (a link followed, Back, a hash typed) until `asker`
 * answers, by calling `leave(to)` or not at all; null lets it go again. Programmatic `go()`
 * calls are for the holder to make once it has released the hold. A real navigation (another
 * page, a reload, closing the tab) is the holder's `beforeunload` to ask about.
 */
export function holdNavigation(asker: ((to: string) => void) | null): void {
  ask = asker;
}

/** Leaves for `to` (a hash, as the asker was given), the hold released. */
export function leave(to: string): void {
  ask = null;
  location.hash = to;
}

// A same-document link: asked about before it is followed, so that it adds no history entry.
document.addEventListener('click', (e) => {
  if (!ask || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.target as Element | null)?.closest?.('a[href]') as HTMLAnchorElement | null;
  if (!a || (a.target && a.target !== '_self')) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || url.pathname !== location.pathname || url.search !== location.search || !url.hash || url.hash === location.hash) return;
  e.preventDefault();
  ask(url.hash);
});

// Back, Forward or a typed hash: put the address back and ask. Registered before useRoute's
// listener (this module loads first), so the route never changes under the question.
addEventListener('hashchange', (e) => {
  if (!ask) return;
  e.stopImmediatePropagation();
  const to = location.hash;
  history.replaceState(history.state, '', e.oldURL);
  ask(to);
});

let dialogs = 0;

/**
 * A modal question in the console's style (a native `<dialog>`: focus stays in it, Escape is
 * Cancel). Cancel (or what `dismiss` names it) has the focus first, as the choice that changes nothing.
 */
export function ConfirmDialog({ title, children, confirm, dismiss = 'Cancel', danger, busy, onConfirm, onCancel }: {
  title: string; children: ComponentChildren; confirm: string; dismiss?: string; danger?: boolean; busy?: boolean; onConfirm: () => void; onCancel: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const [n] = useState(() => ++dialogs);
  useLayoutEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  return (
    <dialog ref={ref} class="confirm" role="alertdialog" aria-labelledby={`confirm-title-${n}`} aria-describedby={`confirm-body-${n}`}
      onCancel={(e) => { e.preventDefault(); if (!busy) onCancel(); }}>
      <h2 id={`confirm-title-${n}`} class="confirm-title">{title}</h2>
      <div id={`confirm-body-${n}`} class="confirm-body">{children}</div>
      <div class="row confirm-actions">
        <button type="button" class="btn ghost" autoFocus disabled={busy} onClick={onCancel}>{dismiss}</button>
        <button type="button" class={`btn ${danger ? 'danger' : 'primary'}`} disabled={busy} onClick={onConfirm}>{confirm}</button>
      </div>
    </dialog>
  );
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
