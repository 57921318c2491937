// Generated images as adapters receive them: downloading a result URL without opening an SSRF
// hole, and turning bytes into an ImageOutput cropped to the ratio the caller asked for.

import sharp, { type Metadata } from 'sharp';
import { aspectValue } from './aspect.ts';
import { readCapped } from './http.ts';
import { fetchPublicUrl, InputError } from './inputs.ts';
import { abortedError } from './sleep.ts';
import { ProviderError, type AspectRatio, type ImageOutput } from './types.ts';

const MEDIA_TYPES: Record<string, string> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp', avif: 'image/avif' };

const bad = (message: string) => new ProviderError(message, { code: 'bad_response', retryable: false });

export interface DownloadOptions {
  /** The configured endpoint's origin: trusted like the endpoint itself (it may be on a LAN). */
  trustedOrigin: string;
  /** Default 32 MiB. */
  maxBytes?: number | undefined;
  /** Default 120 s. */
  timeoutMs?: number | undefined;
  signal: AbortSignal;
}

/**
 * Downloads a generated image. Anything but the trusted origin must be a public https host
 * (fetchPublicUrl's SSRF rules); credentials are never sent to either.
 */
export async function downloadImage(url: string, opts: DownloadOptions): Promise<Buffer> {
  const maxBytes = opts.maxBytes ?? 32 * 1024 * 1024;
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const { signal } = opts;
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw bad('upstream provider returned an invalid image URL');
  }
  const trusted = opts.trustedOrigin === target.origin;
  try {
    if (!trusted) return (await fetchPublicUrl(target.href, { maxBytes, timeoutMs, signal })).data;
    const res = await fetch(target, { signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]), redirect: 'error' });
    if (!res.ok) {
      await res.body?.cancel().catch(() => {});
      throw new ProviderError(`upstream image download returned ${res.status}`, { code: 'upstream_error', retryable: true, status: res.status });
    }
    return await readCapped(res, maxBytes);
  } catch (err) {
    if (signal.aborted) throw abortedError(signal.reason);
    if (err instanceof ProviderError) throw err;
    const reason = err instanceof InputError ? `: ${err.message}` : '';
    throw new ProviderError(`could not download the generated image${reason}`, { code: 'network', retryable: true, cause: err });
  }
}

/** Base64 image data from an upstream JSON body; malformed data is a bad response. */
export function decodeBase64Image(b64: string): Buffer {
  if (!/^[A-Za-z0-9+/=\s]+$/.test(b64)) throw bad('upstream provider returned malformed image data');
  return Buffer.from(b64, 'base64');
}

/**
 * Reads an upstream image and returns it as an ImageOutput: PNG/JPEG/WebP/AVIF kept as they are,
 * anything else re-encoded as PNG, and centre-cropped to the requested ratio when the upstream's
 * size differs by more than 1 % (upstreams offer few sizes).
 */
export async function toImageOutput(data: Buffer, ratio: AspectRatio): Promise<Omit<ImageOutput, 'providerRequestId'>> {
  let meta: Metadata;
  try {
    meta = await sharp(data, { limitInputPixels: 100_000_000 }).metadata();
  } catch {
    throw bad('upstream provider returned an unreadable image');
  }
  const { width, height } = meta;
  if (!width || !height || !meta.format || meta.format === 'svg') throw bad('upstream provider returned an unreadable image');
  const format = meta.format === 'heif' && meta.compression === 'av1' ? 'avif' : meta.format;
  const keep = format in MEDIA_TYPES ? (format as 'png' | 'jpeg' | 'webp' | 'avif') : 'png';
  const r = aspectValue(ratio);
  const off = Math.abs(width / height - r) / r > 0.01;
  if (!off && keep === format) return { data, mediaType: MEDIA_TYPES[keep]!, width, height };
  const target = !off ? { width, height } : width / height > r
    ? { width: Math.round(height * r), height }
    : { width, height: Math.round(width / r) };
  const out = await sharp(data, { limitInputPixels: 100_000_000 })
    .resize({ ...target, fit: 'cover', position: 'centre' })
    .toFormat(keep)
    .toBuffer({ resolveWithObject: true });
  return { data: out.data, mediaType: MEDIA_TYPES[keep]!, width: out.info.width, height: out.info.height };
}
