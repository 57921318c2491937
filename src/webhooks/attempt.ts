// One delivery attempt: POST the signed message to the endpoint, connecting only to the addresses
// vetted for this attempt, following no redirect, within KILN_WEBHOOK_TIMEOUT_MS. The answer's
// status and Retry-After are kept; its body is never read or stored (a stored body would turn a
// webhook into a read-anything SSRF).

import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { AttemptOutcome } from '../db/sql/record_webhook_attempt.ts';
import { parseEndpointUrl, UrlRefused, vetHost, type Address } from './ssrf.ts';

const TLS_CODES = /^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|EPROTO$|HOSTNAME_MISMATCH|ERR_OSSL)/;

function pinnedLookup(addresses: Address[]): LookupFunction {
  // Node asks at connect time: answering with the vetted list is what defeats DNS rebinding.
  return ((_host: string, options: { all?: boolean }, cb: (...args: unknown[]) => void) => {
    if (options?.all) cb(null, addresses);
    else cb(null, addresses[0]!.address, addresses[0]!.family);
  }) as unknown as LookupFunction;
}

/** Retry-After as seconds (delta or HTTP date), or null. */
export function retryAfterSeconds(value: string | string[] | undefined, now = Date.now()): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return null;
  if (/^\d{1,9}$/.test(v.trim())) return Number(v.trim());
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, Math.ceil((at - now) / 1000)) : null;
}

export interface AttemptOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  /** Extra trusted CA (tests with a self-signed https receiver). */
  ca?: string | Buffer;
}

export async function attemptDelivery(rawUrl: string, headers: Record<string, string>, body: string, opts: AttemptOptions): Promise<AttemptOutcome> {
  const started = performance.now();
  const done = (o: Omit<AttemptOutcome, 'durationMs'>): AttemptOutcome => ({ ...o, durationMs: performance.now() - started });
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), opts.timeoutMs);
  try {
    let addrs: Address[];
    let url: URL;
    try {
      url = parseEndpointUrl(rawUrl, opts.allowPrivate);
      addrs = await vetHost(url, opts.allowPrivate);
    } catch (e) {
      const msg = e instanceof UrlRefused ? e.message.replace(/^url: /, '') : 'the host could not be resolved';
      return done({ statusCode: null, errorClass: 'refused', error: `refused: ${msg}`, retryAfterSeconds: null });
    }
    const mod = url.protocol === 'https:' ? https : http;
    return await new Promise<AttemptOutcome>((resolve) => {
      const req = mod.request(url, {
        method: 'POST',
        // A pooled socket could outlive the vetting it was made under.
        agent: false,
        signal: ac.signal,
        lookup: pinnedLookup(addrs),
        headers: { 'content-type': 'application/json', 'user-agent': 'kiln-webhooks/1', 'content-length': String(Buffer.byteLength(body)), ...headers },
        ...(opts.ca && url.protocol === 'https:' ? { ca: opts.ca } : {}),
      });
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        const retryAfter = status === 429 || status === 503 ? retryAfterSeconds(res.headers['retry-after']) : null;
        // The body is never read: drop the connection once the status is known.
        res.destroy();
        req.destroy();
        if (status >= 200 && status < 300) resolve(done({ statusCode: status, errorClass: null, error: null, retryAfterSeconds: null }));
        else if (status >= 300 && status < 400) resolve(done({ statusCode: status, errorClass: 'redirect', error: `redirect: answered ${status} (redirects are not followed)`, retryAfterSeconds: null }));
        else resolve(done({ statusCode: status, errorClass: 'status', error: `status: answered ${status}`, retryAfterSeconds: retryAfter }));
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (ac.signal.aborted) resolve(done({ statusCode: null, errorClass: 'timeout', error: `timeout: no answer within ${opts.timeoutMs} ms`, retryAfterSeconds: null }));
        else if (TLS_CODES.test(err.code ?? '')) resolve(done({ statusCode: null, errorClass: 'tls', error: `tls: ${err.code}`, retryAfterSeconds: null }));
        else resolve(done({ statusCode: null, errorClass: 'refused', error: `refused: ${err.code ?? 'connection failed'}`, retryAfterSeconds: null }));
      });
      req.end(body);
    });
  } finally {
    clearTimeout(timer);
  }
}
