// GET /files/<path> — serves the image store: public objects to anyone, private ones only
// with a valid, unexpired signature (`?expires=…&sig=…`, see storage/store.ts signedUrl).
// Objects in S3 answer 302 to a presigned GET that ends no later than the Kiln URL
// (KILN_S3_REDIRECT=0 streams them through instead); outputs removed by retention answer 410.

import type { H3, H3Event } from 'h3';
import type { Context } from '../context.ts';
import { ApiError, errors } from '../errors.ts';
import { isValidPath, locateObject, MAX_PRESIGN_SECONDS, needBucket, verifySignature, type LocatedObject } from '../storage/store.ts';
import { requestContext } from '../telemetry/http.ts';

const PREFIX = '/files/';

const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; sandbox",
  'cross-origin-resource-policy': 'cross-origin',
};

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
  // A read finds the object wherever it is: when its bucket key vanished under a stream (a
  // move switched it and the sweep ran), the row is read again.
  for (let attempt = 0; attempt < 3; attempt++) {
    const found = await locateObject(ctx, path);
    // Private objects are invisible without a signature, removed ones too.
    const visibility = found?.state === 'stored' ? found.object.visibility : found?.visibility;
    if (!found || (!signed && visibility !== 'public')) {
      throw errors.notFound('File');
    }
    if (found.state === 'expired') throw errors.gone('This file', found.expiredAt);
    const obj = found.object;
    const cacheControl = signed ? `private, max-age=${maxAge}` : `public, max-age=${maxAge}, immutable`;
    if (obj.data) return bytes(obj, obj.data, cacheControl);
    const bucket = await needBucket(ctx.config);
    if (bucket.settings.redirect) {
      // Never outlives the Kiln URL; a public URL's redirect is short-lived and is not cached,
      // so every visit is checked here (retention, a move) first.
      // The presigned URL counts from its X-Amz-Date (whole seconds): its lifetime is taken from
      // that same second, or a second boundary passed since maxAge was read would let it end one
      // second after the Kiln URL.
      const signingDate = new Date();
      const left = signed ? Number(q.get('expires')) - Math.floor(signingDate.getTime() / 1000) : MAX_PRESIGN_SECONDS;
      const ttl = Math.min(MAX_PRESIGN_SECONDS, left);
      if (ttl < 1) throw new ApiError('unauthorized', 'This signed URL has expired; fetch a fresh one.', { status: 403 });
      return new Response(null, {
        status: 302,
        headers: { location: await bucket.presign(obj.location!, ttl, signingDate), 'cache-control': 'private, no-store', ...SECURITY_HEADERS },
      });
    }
    const body = await bucket.open(obj.location!);
    if (!body) continue;
    return bytes(obj, body.transformToWebStream(), cacheControl);
  }
  throw new Error('an object row points at bucket bytes that are missing');
}

function bytes(obj: LocatedObject, body: Buffer | ReadableStream, cacheControl: string): Response {
  return new Response(body as unknown as BodyInit, {
    headers: {
      'content-type': obj.contentType,
      'content-length': String(obj.bytes),
      'cache-control': cacheControl,
      'last-modified': obj.createdAt.toUTCString(),
      ...SECURITY_HEADERS,
    },
  });
}

export function mountFiles(app: H3, ctx: Context): void {
  app.get(`${PREFIX}**`, (event) => serveFile(requestContext(ctx, event.req), event));
}
