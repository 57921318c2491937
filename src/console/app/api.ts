// The console's only way to the server: the public REST API through kiln/client, with the API key
// kept in sessionStorage (never in a URL, never logged). Also what the console remembers of the
// generations it started (sessionStorage), for servers without GET /generations.

import { createKilnClient, KilnError, type Generation, type GenerationRequest, type KilnClient } from '../../client/index.ts';
import { parseEventStream, type SseMessage } from '../../client/events.ts';

export { KilnError };
export type { Generation, GenerationRequest, KilnClient };

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

export function makeClient(apiKey: string): KilnClient {
  // Same origin as the page: the CSP allows no other.
  return createKilnClient({ baseUrl: location.origin, apiKey, retry: { maxAttempts: 3 } });
}

/**
 * A call to a public route the typed client does not wrap (yet): same base URL, key, retries and
 * error type as every other call.
 */
export async function call<T>(client: KilnClient, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string,
  opts: { query?: Record<string, string | number | undefined>; body?: unknown; signal?: AbortSignal } = {}): Promise<T> {
  const raw = client.raw as unknown as Record<string, (p: string, o: unknown) => Promise<{ data?: T; error?: unknown; response: Response }>>;
  const query = opts.query && Object.fromEntries(Object.entries(opts.query).filter(([, v]) => v !== undefined && v !== ''));
  const { data, error, response } = await raw[method]!(path, { params: { query }, body: opts.body, signal: opts.signal });
  if (!response.ok) throw KilnError.from(response, error);
  return data as T;
}

/** True when the server has no such route (an older Kiln): the section says so instead of failing. */
export function isMissingRoute(e: unknown): boolean {
  return e instanceof KilnError && (e.status === 404 || e.status === 405) && /no such endpoint|method not allowed/i.test(e.message);
}

const documents = new WeakMap<KilnClient, Promise<Set<string>>>();

/**
 * Whether this server has a route (`GET /usage/daily`), from its OpenAPI document (read once):
 * sections built on newer routes ask first instead of probing with requests that fail.
 */
export async function hasRoute(client: KilnClient, method: string, path: string): Promise<boolean> {
  let known = documents.get(client);
  if (!known) {
    known = call<{ paths?: Record<string, Record<string, unknown>> }>(client, 'GET', '/openapi.json').then((doc) => {
      const out = new Set<string>();
      for (const [p, ops] of Object.entries(doc.paths ?? {})) for (const m of Object.keys(ops)) out.add(`${m.toUpperCase()} ${p}`);
      return out;
    });
    documents.set(client, known);
    known.catch(() => documents.delete(client));
  }
  return (await known).has(`${method} ${path}`);
}

export function errorText(e: unknown): string {
  if (e instanceof KilnError) return e.status ? `${e.message} (${e.type}, HTTP ${e.status})` : `${e.message} (${e.type})`;
  return e instanceof Error ? e.message : String(e);
}

/**
 * GET /events (the account's event stream) from `lastEventId` on, until it ends or `signal`
 * aborts. The caller resumes after a drop with the last id it saw.
 */
export async function* accountEvents(client: KilnClient, lastEventId: string | null, signal: AbortSignal): AsyncGenerator<SseMessage> {
  const raw = client.raw as unknown as { GET: (p: string, o: unknown) => Promise<{ data?: unknown; error?: unknown; response: Response }> };
  const { data, error, response } = await raw.GET('/events', {
    headers: { accept: 'text/event-stream', ...(lastEventId ? { 'last-event-id': lastEventId } : {}) }, parseAs: 'stream', signal,
  });
  if (!response.ok) throw KilnError.from(response, error);
  if (!(data instanceof ReadableStream)) return;
  yield* parseEventStream(data as ReadableStream<Uint8Array>);
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

export function shortId(id: string): string {
  return id.slice(0, 8);
}
