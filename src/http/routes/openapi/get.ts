// GET /openapi.json — the OpenAPI 3.1 description generated from the route definitions, with a
// strong ETag: generators and /docs revalidate with If-None-Match (304), and If-Match, which RFC
// 9110 §13.1.1 has a server evaluate once it sends ETags, answers 412 when the document changed.

import { createHash } from 'node:crypto';
import * as v from 'valibot';
import { ApiError } from '../../../errors.ts';
import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';

const CACHE_CONTROL = 'public, max-age=300';

let cached: { body: string; etag: string } | null = null;

/** Whether a list of entity tags (`If-Match`, `If-None-Match`) holds `etag`; weak tags compare as strong ones only under `weak`. */
function listed(header: string, etag: string, weak: boolean): boolean {
  if (header.trim() === '*') return true;
  return header.split(',').some((raw) => {
    const tag = raw.trim();
    if (tag.startsWith('W/')) return weak && tag.slice(2) === etag;
    return tag === etag;
  });
}

export function openApiRoute(build: () => unknown) {
  return defineRoute({
    method: 'GET',
    path: '/openapi.json',
    operationId: 'getOpenApi',
    summary: 'The OpenAPI 3.1 document',
    description:
      'This document, generated from the same schemas that validate requests. Public (no key) and cacheable for 5 minutes; ' +
      'it carries a strong `ETag`: revalidate with `If-None-Match` (304 while unchanged). `If-Match` naming another version is refused with 412.',
    tag: 'Meta',
    scope: null,
    headers: {
      'If-None-Match': v.pipe(v.string(), v.description('`ETag`s already held: 304 when one is the current version.')),
      'If-Match': v.pipe(v.string(), v.description('Answer only if the document is still this version (`ETag`), else 412.')),
    },
    success: { status: 200, description: 'OpenAPI 3.1.0 document.', headers: { etag: 'The document\'s version (a strong entity tag).' } },
    also: [{ status: 304, description: 'Not modified: `If-None-Match` names the current version.', headers: { etag: 'The document\'s version.' } }],
    errors: [412],
    async handler(_ctx, event) {
      if (!cached) {
        const body = JSON.stringify(build());
        cached = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` };
      }
      const { body, etag } = cached;
      const ifMatch = event.req.headers.get('if-match');
      if (ifMatch !== null && !listed(ifMatch, etag, false)) {
        throw new ApiError('precondition_failed', `The document changed: its version is ${etag}.`, { status: 412, headers: { etag } });
      }
      const ifNoneMatch = event.req.headers.get('if-none-match');
      if (ifNoneMatch !== null && listed(ifNoneMatch, etag, true)) {
        return new Response(null, { status: 304, headers: { etag, 'cache-control': CACHE_CONTROL } });
      }
      return sendJson(event, body, { raw: true, headers: { etag, 'cache-control': CACHE_CONTROL } });
    },
  });
}
