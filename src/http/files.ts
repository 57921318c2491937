// GET /files/<path> — serves the image store: public objects to anyone, private ones only
// with a valid, unexpired signature (`?expires=…&sig=…`, see storage/store.ts signedUrl).

import type { H3, H3Event } from 'h3';
import type { Context } from '../context.ts';
import { ApiError, errors } from '../errors.ts';
import { getObject, isValidPath, verifySignature } from '../storage/store.ts';

const PREFIX = '/files/';

export async function serveFile(ctx: Context, event: H3Event): Promise<Response> {
  // The raw (still percent-encoded) path: store paths never need encoding, so any `%` is refused.
  const path = event.url.pathname.slice(PREFIX.length);
  if (!isValidPath(path)) throw errors.notFound('File');
  const q = event.url.searchParams;
  const signed = q.has('sig') || q.has('expires');
  let maxAge = 31_536_000;
  if (signed) {
    // Checked before the lookup, so a bad signature says nothing about whether the object exists.
    const verdict = await verifySignature(ctx, path, q.get('expires'), q.get('sig'));
    if (verdict === 'expired') throw new ApiError('unauthorized', 'This signed URL has expired; fetch a fresh one.', { status: 403 });
    if (verdict !== 'ok') throw new ApiError('unauthorized', 'This signed URL is invalid.', { status: 403 });
    maxAge = Math.max(0, Number(q.get('expires')) - Math.floor(Date.now() / 1000));
  }
  const obj = await getObject(ctx.sql, path);
  // Private objects are invisible without a signature.
  if (!obj || (!signed && obj.visibility !== 'public')) throw errors.notFound('File');
  return new Response(obj.data as unknown as BodyInit, {
    headers: {
      'content-type': obj.contentType,
      'content-length': String(obj.data.byteLength),
      'cache-control': signed ? `private, max-age=${maxAge}` : `public, max-age=${maxAge}, immutable`,
      'last-modified': obj.createdAt.toUTCString(),
      'x-content-type-options': 'nosniff',
      'content-security-policy': "default-src 'none'; sandbox",
      'cross-origin-resource-policy': 'cross-origin',
    },
  });
}

export function mountFiles(app: H3, ctx: Context): void {
  app.get(`${PREFIX}**`, (event) => serveFile(ctx, event));
}
