// The server's signing secret, from which every HMAC it issues is keyed: signed file URLs
// (storage/store.ts), list cursors (generations/list.ts) and, through HKDF, the key that keeps
// webhook secrets and the SSO transaction cookie sealed (internal/sealed.ts).

import { randomBytes } from 'node:crypto';
import type { Context } from '../context.ts';
import type { Sql } from '../db/pool.ts';
import { ensureSecret } from '../db/sql/ensure_secret.ts';
import { rootOf } from '../root.ts';

const secrets = new WeakMap<Sql, Promise<Buffer>>();

/** KILN_URL_SIGNING_SECRET, or a secret generated once and kept in the database for every process. */
export function signingKey(ctx: Pick<Context, 'sql' | 'config'>): Promise<Buffer> {
  if (ctx.config.urlSigningSecret) return Promise.resolve(Buffer.from(ctx.config.urlSigningSecret, 'utf8'));
  const sql = rootOf(ctx.sql);
  let p = secrets.get(sql);
  if (!p) {
    p = ensureSecret(sql, 'url_signing', randomBytes(32)).then(([r]) => r!.value);
    p.catch(() => secrets.delete(sql));
    secrets.set(sql, p);
  }
  return p;
}
