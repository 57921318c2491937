// Turns request ImageInputs (data: URIs or https URLs) into bytes a provider can use, without
// letting a caller make the service reach private networks (SSRF, DNS rebinding, redirects).

import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpsRequest } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { isIP, type LookupFunction } from 'node:net';
import sharp from 'sharp';
import { isPublicAddress } from '../internal/address.ts';
import type { ImageInputData } from './types.ts';

/** Message is safe to return to the API client. */
export class InputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InputError';
  }
}

export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export interface FetchOptions {
  /** Decoded size cap in bytes. Default 10 MiB. */
  maxBytes?: number;
  /** Whole-fetch deadline including redirects. Default 15 s. */
  timeoutMs?: number;
  /** Default 3. Every hop is re-vetted. */
  maxRedirects?: number;
  signal?: AbortSignal;
  /** DNS resolution; default is the system resolver. Tests inject names → loopback here. */
  resolve?: Resolver;
  /** Extra addresses to allow despite being non-public. Only tests set this; never configure it in production. */
  allowAddress?: (ip: string) => boolean;
  /** Extra trusted CA for TLS (tests use a self-signed peer). */
  ca?: string | Buffer;
}

export interface ResolveImageOptions extends FetchOptions {
  /** The provider fetches https URLs itself: pass them through instead of downloading. */
  passUrls?: boolean;
}

export const DEFAULT_MAX_IMAGE_BYTES = 10 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 15_000;
const DEFAULT_MAX_REDIRECTS = 3;
const SUPPORTED: Record<string, string> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp', gif: 'image/gif' };

// ---------------------------------------------------------------- addresses

function vet(ip: string, opts: FetchOptions): boolean {
  return isPublicAddress(ip) || (opts.allowAddress?.(ip) ?? false);
}

// ---------------------------------------------------------------- data: URIs

function percentDecode(s: string): Buffer {
  const raw = Buffer.from(s, 'utf8');
  const out = Buffer.alloc(raw.length);
  const hex = (c: number) => (c >= 48 && c <= 57 ? c - 48 : c >= 65 && c <= 70 ? c - 55 : c >= 97 && c <= 102 ? c - 87 : -1);
  let n = 0;
  for (let i = 0; i < raw.length; i++) {
    const hi = raw[i] === 0x25 && i + 2 < raw.length ? hex(raw[i + 1]!) : -1;
    const lo = hi === -1 ? -1 : hex(raw[i + 2]!);
    if (lo !== -1) {
      out[n++] = hi * 16 + lo;
      i += 2;
    } else out[n++] = raw[i]!;
  }
  return out.subarray(0, n);
}

/** RFC 2397 `data:` URI → bytes; `mediaType` is the URI's own type (or `fallbackType`). */
export function decodeDataUri(
  uri: string,
  maxBytes = DEFAULT_MAX_IMAGE_BYTES,
  fallbackType = 'image/png',
): { data: Buffer; mediaType: string } {
  if (!/^data:/i.test(uri)) throw new InputError('not a data: URI');
  const comma = uri.indexOf(',');
  if (comma === -1) throw new InputError('malformed data: URI (missing ",")');
  const params = uri.slice(5, comma).split(';').map((p) => p.trim());
  const isBase64 = params.length > 1 && params[params.length - 1]!.toLowerCase() === 'base64';
  const declared = params[0]!.toLowerCase();
  const mediaType = declared === '' ? fallbackType : declared;
  const payload = uri.slice(comma + 1);
  let data: Buffer;
  if (isBase64) {
    const text = payload.includes('%') ? percentDecode(payload).toString('latin1') : payload;
    const clean = text.replace(/\s+/g, '');
    if (!/^[A-Za-z0-9+/\-_]*={0,2}$/.test(clean)) throw new InputError('malformed data: URI (invalid base64)');
    if (Math.floor((clean.length * 3) / 4) > maxBytes + 2) throw tooLarge(maxBytes);
    data = Buffer.from(clean, clean.includes('-') || clean.includes('_') ? 'base64url' : 'base64');
  } else {
    if (payload.length > maxBytes * 3) throw tooLarge(maxBytes);
    data = percentDecode(payload);
  }
  if (data.length > maxBytes) throw tooLarge(maxBytes);
  if (data.length === 0) throw new InputError('data: URI is empty');
  return { data, mediaType };
}

function tooLarge(maxBytes: number): InputError {
  const limit = maxBytes >= 1024 * 1024 ? `${Math.round(maxBytes / 1024 / 1024)} MB` : `${maxBytes} bytes`;
  return new InputError(`image is larger than ${limit}`);
}

// ---------------------------------------------------------------- https fetch

function pinnedLookup(addresses: Array<{ address: string; family: number }>): LookupFunction {
  // Node asks again at connect time; answering with the vetted list is what defeats rebinding.
  return ((_host: string, options: { all?: boolean }, cb: (...args: unknown[]) => void) => {
    if (options?.all) cb(null, addresses);
    else cb(null, addresses[0]!.address, addresses[0]!.family);
  }) as unknown as LookupFunction;
}

async function vetHost(url: URL, opts: FetchOptions): Promise<Array<{ address: string; family: number }> | null> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    if (!vet(host, opts)) throw new InputError('image URL host is not allowed');
    return null; // literal: Node connects without a lookup
  }
  let addrs: Array<{ address: string; family: number }>;
  try {
    addrs = opts.resolve ? await opts.resolve(host) : await dnsLookup(host, { all: true, verbatim: true });
  } catch {
    throw new InputError('image URL host could not be resolved');
  }
  if (addrs.length === 0) throw new InputError('image URL host could not be resolved');
  // Any non-public answer refuses the host: mixing one in is a classic rebinding trick.
  if (!addrs.every((a) => vet(a.address, opts))) throw new InputError('image URL host is not allowed');
  return addrs;
}

function get(url: URL, addrs: Array<{ address: string; family: number }> | null, opts: FetchOptions, signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, {
      method: 'GET',
      agent: false, // no pooled socket can outlive the address vetting it was made under
      signal,
      headers: { accept: 'image/*', 'user-agent': 'kiln-image-fetch/1' },
      ...(addrs ? { lookup: pinnedLookup(addrs) } : {}),
      ...(opts.ca ? { ca: opts.ca } : {}),
    });
    req.on('response', resolve);
    req.on('error', reject);
    req.end();
  });
}

async function readCapped(res: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    res.destroy();
    throw tooLarge(maxBytes);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > maxBytes) {
      res.destroy();
      throw tooLarge(maxBytes);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** GET a public https URL with every hop vetted and the connection pinned to the vetted address. */
export async function fetchPublicUrl(rawUrl: string, opts: FetchOptions = {}): Promise<{ data: Buffer; contentType: string | null }> {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_IMAGE_BYTES;
  const maxRedirects = opts.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new InputError('timed out fetching image URL')), opts.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const onOuterAbort = () => controller.abort(opts.signal?.reason);
  opts.signal?.addEventListener('abort', onOuterAbort, { once: true });
  if (opts.signal?.aborted) onOuterAbort();
  try {
    let url = parseHttpsUrl(rawUrl);
    for (let hop = 0; ; hop++) {
      const addrs = await vetHost(url, opts);
      let res: IncomingMessage;
      try {
        res = await get(url, addrs, opts, controller.signal);
      } catch (err) {
        if (controller.signal.reason instanceof InputError) throw controller.signal.reason;
        if (opts.signal?.aborted) throw new InputError('image fetch was cancelled');
        throw new InputError('could not connect to image URL host');
      }
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && res.headers.location) {
        res.resume();
        if (hop >= maxRedirects) throw new InputError('image URL redirected too many times');
        let next: URL;
        try {
          next = new URL(res.headers.location, url);
        } catch {
          throw new InputError('image URL redirected to an invalid location');
        }
        if (next.protocol !== 'https:') throw new InputError('image URL redirected to a non-https location');
        url = next;
        continue;
      }
      if (status < 200 || status >= 300) {
        res.resume();
        throw new InputError(`image URL returned status ${status}`);
      }
      try {
        const data = await readCapped(res, maxBytes);
        return { data, contentType: res.headers['content-type'] ?? null };
      } catch (err) {
        if (err instanceof InputError) throw err;
        if (controller.signal.reason instanceof InputError) throw controller.signal.reason;
        throw new InputError('image download was interrupted');
      }
    }
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onOuterAbort);
  }
}

function parseHttpsUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InputError('image URL is not a valid URL');
  }
  if (url.protocol !== 'https:') throw new InputError('image URL must use https');
  if (url.username || url.password) throw new InputError('image URL must not contain credentials');
  return url;
}

// ---------------------------------------------------------------- images

/** Identifies the real format from the bytes; the declared type is never trusted. */
export async function sniffImage(data: Buffer): Promise<string> {
  let format: string | undefined;
  try {
    format = (await sharp(data, { limitInputPixels: 100_000_000 }).metadata()).format;
  } catch {
    format = undefined;
  }
  const mediaType = format ? SUPPORTED[format] : undefined;
  if (!mediaType) throw new InputError('not a supported image (png, jpeg, webp or gif)');
  return mediaType;
}

function checkDeclaredType(mediaType: string): void {
  if (!/^image\/[a-z0-9.+-]+$/i.test(mediaType)) throw new InputError(`mediaType must be an image type`);
}

export async function resolveImageInput(
  input: { url: string; mediaType?: string | null },
  opts: ResolveImageOptions = {},
): Promise<ImageInputData> {
  const declared = (input.mediaType ?? 'image/png').toLowerCase();
  checkDeclaredType(declared);
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_IMAGE_BYTES;
  if (/^data:/i.test(input.url)) {
    const decoded = decodeDataUri(input.url, maxBytes, declared);
    checkDeclaredType(decoded.mediaType);
    return { data: decoded.data, mediaType: await sniffImage(decoded.data) };
  }
  if (opts.passUrls) {
    const url = parseHttpsUrl(input.url);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) && !vet(host, opts)) throw new InputError('image URL host is not allowed');
    return { url: url.href, mediaType: declared };
  }
  const { data } = await fetchPublicUrl(input.url, opts);
  return { data, mediaType: await sniffImage(data) };
}

/** Resolves all inputs concurrently; the first failure cancels the rest and names its index. */
export async function resolveImageInputs(
  inputs: ReadonlyArray<{ url: string; mediaType?: string | null }>,
  opts: ResolveImageOptions = {},
): Promise<ImageInputData[]> {
  const ctl = new AbortController();
  const onAbort = () => ctl.abort(opts.signal?.reason);
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  if (opts.signal?.aborted) onAbort();
  try {
    return await Promise.all(
      inputs.map((input, i) =>
        resolveImageInput(input, { ...opts, signal: ctl.signal }).catch((err: unknown) => {
          ctl.abort();
          if (err instanceof InputError) throw new InputError(`images[${i}]: ${err.message}`);
          throw err;
        }),
      ),
    );
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
  }
}
