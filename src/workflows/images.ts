// Image node URLs: inline data: URIs, external https URLs, or images in the store (a `seed/…`
// path, the owner's own path, or a public/signed URL of this store) resolved through storage/store.ts.

import type { Context } from '../context.ts';
import { resolveSource } from '../storage/store.ts';

export type ImageRef =
  | { kind: 'inline'; url: string }
  | { kind: 'external'; url: string }
  | { kind: 'store'; path: string }
  | { kind: 'invalid'; problem: string };

/** How an image node's url will be read for `accountId`; `publicUrl` is this service's origin. */
export function classifyImage(publicUrl: string, accountId: string, url: string): ImageRef {
  if (/^data:/i.test(url)) {
    return url.indexOf(',') > 5 ? { kind: 'inline', url } : { kind: 'invalid', problem: 'url is a malformed data: URI' };
  }
  const ctx = { config: { publicUrl } } as Context;
  if (/^[a-z][a-z0-9+.-]*:/i.test(url)) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { kind: 'invalid', problem: 'url is not a valid URL' };
    }
    let own = false;
    try {
      own = parsed.origin === new URL(publicUrl).origin;
    } catch {
      own = false;
    }
    if (own) {
      const path = resolveSource(ctx, accountId, url);
      return path ? { kind: 'store', path } : { kind: 'invalid', problem: 'url names no image of yours in the store' };
    }
    if (parsed.protocol !== 'https:' || parsed.username || parsed.password) {
      return { kind: 'invalid', problem: 'url must be an https:// URL, a data: URI or a store path' };
    }
    return { kind: 'external', url };
  }
  const path = resolveSource(ctx, accountId, url);
  return path ? { kind: 'store', path } : { kind: 'invalid', problem: 'url names no image of yours in the store (use seed/… or your own path)' };
}
