// The console's only way to the server: the public REST API through kiln/client, with the API key
// kept in sessionStorage (never in a URL, never logged) or the SSO session's HttpOnly cookie. Also
// what the console remembers of the generations it started (their request and when each status
// was seen), which GET bodies lack.

import { createKilnClient, KilnError, type Generation, type GenerationRequest, type KilnClient, type WebhookEndpoint } from '../../client/index.ts';

export { KilnError };
export type { Generation, GenerationRequest, KilnClient, WebhookEndpoint };

const KEY_SLOT = 'kiln.console.key';
const MINE_SLOT = 'kiln.console.generations';

export function storedKey(): string | null {
  try {
    return sessionStorage.getItem(KEY_SLOT);
  } catch {
    return null;
  }
}

export function storeKey(key: string | null): void {
  try {
    if (key === null) {
      sessionStorage.removeItem(KEY_SLOT);
      sessionStorage.removeItem(MINE_SLOT);
    } else sessionStorage.setItem(KEY_SLOT, key);
  } catch {
    /* storage disabled: the key lives for this page only */
  }
}

/**
 * A client with this API key, or (null) with the SSO session cookie the browser sends by itself;
 * `onUnauthorized` hears every 401 (for a session: it ended, so the console signs out).
 */
export function makeClient(apiKey: string | null, onUnauthorized?: () => void): KilnClient {
  const fetchAndWatch = async (r: Request) => {
    const res = await fetch(r);
    if (res.status === 401) onUnauthorized?.();
    return res;
  };
  // Same origin as the page: the CSP allows no other.
  return createKilnClient({ baseUrl: location.origin, ...(apiKey ? { apiKey } : { session: true }), retry: { maxAttempts: 3 }, fetch: fetchAndWatch });
}

export function errorText(e: unknown): string {
  if (e instanceof KilnError) return e.status ? `${e.message} (${e.type}, HTTP ${e.status})` : `${e.message} (${e.type})`;
  return e instanceof Error ? e.message : String(e);
}

/** A generation this console started: what was asked, and when each status was first seen. */
export interface Mine {
  id: string;
  request: GenerationRequest;
  createdAt: string;
  seen: Array<{ status: string; at: string }>;
  last?: Generation;
}

export function mine(): Mine[] {
  try {
    const v = JSON.parse(sessionStorage.getItem(MINE_SLOT) ?? '[]');
    return Array.isArray(v) ? v : [];
  } catch {
    return [];
  }
}

export function remember(entry: Mine): void {
  const all = mine().filter((m) => m.id !== entry.id);
  all.unshift(entry);
  try {
    sessionStorage.setItem(MINE_SLOT, JSON.stringify(all.slice(0, 200)));
  } catch {
    /* full or disabled */
  }
}

export function recall(id: string): Mine | undefined {
  return mine().find((m) => m.id === id);
}

/** Records a status seen for one of ours (and its latest body). */
export function noteStatus(id: string, g: Generation): void {
  const m = recall(id);
  if (!m) return;
  if (!m.seen.some((s) => s.status === g.status)) m.seen.push({ status: g.status, at: new Date().toISOString() });
  m.last = g;
  remember(m);
}

// ------------------------------------------------------------------ formatting

/** Microdollars as dollars: small amounts keep their precision ($0.000066), larger ones cents. */
export function money(micros: number | null | undefined): string {
  if (micros === null || micros === undefined) return '—';
  const d = micros / 1_000_000;
  if (micros === 0) return '$0';
  if (Math.abs(d) >= 1) return `$${d.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
  return `$${d.toFixed(6).replace(/0+$/, '').replace(/\.$/, '')}`;
}

export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return d.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

/** A date and time to the minute (for what is hours or days away). */
export function whenMinute(iso: string | null | undefined): string {
  if (!iso) return '—';
  return new Date(iso).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

/**
 * The part of an id that tells it apart: its last 8 hex digits. Kiln's ids are UUIDv7, whose
 * leading digits are a timestamp, the same for every id made within about a minute.
 */
export function shortId(id: string): string {
  return id.replace(/-/g, '').slice(-8);
}

/**
 * A prompt short enough for a title: whitespace collapsed, cut at a word boundary before `max`
 * characters with an ellipsis (mid-word only when a single word is longer than that).
 */
export function shortText(text: string, max = 80): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  const cut = flat.slice(0, max - 1);
  const space = flat[max - 1] === ' ' ? cut.length : cut.lastIndexOf(' ');
  return `${(space >= max * 0.5 ? cut.slice(0, space) : cut).replace(/[\s,;:.!?–—-]+$/, '')}…`;
}
