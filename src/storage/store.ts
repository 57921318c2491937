// The image store (bucket `workflow-images`): metadata rows live in Postgres
// (kiln_private.objects) so every API and worker process shares them; bytes live in the row
// (KILN_STORE=postgres) or in an S3-compatible bucket (s3, ./s3.ts). URLs are public or
// HMAC-signed and expiring. Bytes are written before their row commits (see stageObject).

import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Config } from '../config.ts';
import type { Context } from '../context.ts';
import type { Queryable } from '../db/pool.ts';
import { findObject as findObjectSql } from '../db/sql/find_object.ts';
import type { ObjectRow } from '../db/sql/get_object.ts';
import { noteObjectIntent } from '../db/sql/note_object_intent.ts';
import { recordObject, type RecordObjectArgs } from '../db/sql/record_object.ts';
import { signingKey } from '../internal/signing.ts';
// Type only: the AWS SDK (~0.5 s to load) is imported when a bucket is configured, not by every process.
import type { Bucket } from './s3.ts';
import type { StoreStatus } from './health.ts';

export const BUCKET = 'workflow-images';
export type Visibility = 'private' | 'public';
export type ImageFormat = 'png' | 'jpeg' | 'webp' | 'avif' | 'gif';
export type Backend = 'postgres' | 's3';

/** The longest a presigned GET may live (SigV4's limit is a week; ours stays well inside the sweep's grace). */
export const MAX_PRESIGN_SECONDS = 900;

/** What the store needs of a context: the pool and the configuration. */
export type StoreContext = Pick<Context, 'sql' | 'config'>;

export interface ObjectMeta {
  path: string;
  /** Null for shared seed images. */
  ownerId: string | null;
  contentType: string;
  format: ImageFormat;
  width: number;
  height: number;
  /** Size of the content in bytes. */
  bytes: number;
  visibility: Visibility;
  createdAt: Date;
}

export interface StoredObject extends ObjectMeta {
  data: Buffer;
}

/** An object's row: where its bytes are (inline for postgres). */
export interface LocatedObject extends ObjectMeta {
  backend: Backend;
  location: string | null;
  /** SHA-256 of the bytes; null for rows stored before it was kept. */
  sha256: Buffer | null;
  data: Buffer | null;
}

export interface PutObject {
  path: string;
  /** Account id; null only for paths under `seed/`. */
  owner: string | null;
  data: Buffer;
  contentType: string;
  format: ImageFormat;
  width: number;
  height: number;
  visibility: Visibility;
}

/** An object whose bytes are written (s3) or ready to go into its row (postgres); commit it with commitObject. */
export type StagedObject = RecordObjectArgs;

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
/** Same rule as the table's check constraint: `<account>/<dirs…>/<file>` or `seed/<dirs…>/<file>`. */
const PATH_RE = new RegExp(`^(seed|${UUID})(/[A-Za-z0-9][A-Za-z0-9_-]*)*/[A-Za-z0-9][A-Za-z0-9_.-]*$`);
const MAX_PATH = 300;

/** Strict path check: no `..`, no empty or dot segments, no backslashes, no encodings, no leading `/`. */
export function isValidPath(path: string): boolean {
  return typeof path === 'string' && path.length <= MAX_PATH && PATH_RE.test(path) && !path.includes('..');
}

export const EXTENSIONS: Record<ImageFormat, string> = { png: 'png', jpeg: 'jpg', webp: 'webp', avif: 'avif', gif: 'gif' };
export const MEDIA_TYPES: Record<ImageFormat, string> = {
  png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp', avif: 'image/avif', gif: 'image/gif',
};

/** A new object path `<account id>/<kind>/<uuid>.<ext>`; `kind` is a short word such as `generations`. */
export function objectPath(accountId: string, kind: string, format: ImageFormat, id: string = randomUUID()): string {
  const path = `${accountId}/${kind}/${id}.${EXTENSIONS[format]}`;
  if (!isValidPath(path)) throw new TypeError('invalid object path');
  return path;
}

export function sha256(data: Uint8Array): Buffer {
  return createHash('sha256').update(data).digest();
}

function metaOf(row: ObjectRow): ObjectMeta {
  return {
    path: row.path,
    ownerId: row.owner_id ?? null,
    contentType: row.content_type,
    // Checked by the table: one of the store's formats and visibilities.
    format: row.format as ImageFormat,
    width: row.width,
    height: row.height,
    bytes: row.byte_size,
    visibility: row.visibility as Visibility,
    createdAt: row.created_at,
  };
}

/** The configured bucket, or null when KILN_S3_BUCKET is unset. Set during a move either way, so reads find both sides. */
export async function bucketOf(config: Config): Promise<Bucket | null> {
  if (!config.store.s3) return null;
  const { bucketFor } = await import('./s3.ts');
  return bucketFor(config.store.s3);
}

/**
 * Whether the store answers (docs/storage.md, "When the store is down"): null without a bucket
 * (the bytes are in the database, whose health is /readyz's). Asks the bucket when nothing was
 * heard from it for `freshMs`.
 */
export async function checkStore(config: Config, freshMs?: number): Promise<StoreStatus | null> {
  const bucket = await bucketOf(config);
  return bucket ? bucket.health.check(freshMs) : null;
}

export async function needBucket(config: Config): Promise<Bucket> {
  const b = await bucketOf(config);
  if (!b) throw new Error('an object is stored in S3 but KILN_S3_BUCKET is not set');
  return b;
}

/**
 * Writes an object's bytes where new objects go (KILN_STORE) and returns the row to commit.
 * On s3 the key is noted first (its own commit), then written: if the row never commits — a
 * crash, a duplicate execution that loses — the sweep deletes the bytes after the grace period.
 */
export async function stageObject(ctx: StoreContext, obj: PutObject, backend: Backend = ctx.config.store.backend): Promise<StagedObject> {
  if (!isValidPath(obj.path)) throw new TypeError('invalid object path');
  const base = {
    path: obj.path, ownerId: obj.owner, sha256: sha256(obj.data), byteSize: obj.data.byteLength, contentType: obj.contentType,
    format: obj.format, width: obj.width, height: obj.height, visibility: obj.visibility,
  };
  if (backend === 'postgres') return { ...base, data: obj.data, location: null };
  const bucket = await needBucket(ctx.config);
  const location = bucket.keyFor(obj.path);
  await noteObjectIntent(ctx.sql, location);
  await bucket.write(location, obj.data, obj.contentType);
  return { ...base, data: null, location };
}

/** Commits a staged object's row (in the caller's transaction, when given one). KC001 when the path is taken, KI001 when invalid. */
export async function commitObject(sql: Queryable, staged: StagedObject): Promise<ObjectMeta> {
  const [row] = await recordObject(sql, staged);
  return metaOf(row!);
}

/** Stores a new object (never overwrites: a taken path raises KC001, a bad one KI001). */
export async function putObject(ctx: StoreContext, obj: PutObject): Promise<ObjectMeta> {
  return commitObject(ctx.sql, await stageObject(ctx, obj));
}

export type Found = { state: 'stored'; object: LocatedObject } | { state: 'expired'; path: string; ownerId: string | null; visibility: Visibility; expiredAt: Date } | null;

/** The object's row (with inline bytes on postgres), its tombstone when retention removed it, or null. */
export async function locateObject(ctx: StoreContext, path: string): Promise<Found> {
  if (!isValidPath(path)) return null;
  const [row] = await findObjectSql(ctx.sql, path);
  if (!row) return null;
  if (row.expired_at) return { state: 'expired', path: row.path, ownerId: row.owner_id ?? null, visibility: row.visibility as Visibility, expiredAt: row.expired_at };
  const r = row as Extract<typeof row, { backend: Backend }>;
  return { state: 'stored', object: { ...metaOf(r), backend: r.backend, location: r.location, sha256: r.sha256, data: r.data } };
}

/**
 * The object with its bytes, or null. A read finds the object wherever it is: when its bucket
 * key vanished under it (store migrate moved it and the sweep ran), the row is read again.
 * Ownership is the caller's check (see `canRead`).
 */
export async function getObject(ctx: StoreContext, path: string): Promise<StoredObject | null> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const found = await locateObject(ctx, path);
    if (found?.state !== 'stored') return null;
    const o = found.object;
    if (o.data) return { ...o, data: o.data };
    const data = await (await needBucket(ctx.config)).read(o.location!);
    if (data) return { ...o, data };
  }
  throw new Error('an object row points at bucket bytes that are missing');
}

/** Whether an account may use the object at `path` as a source: its own, or a shared seed image. */
export function canRead(accountId: string, path: string): boolean {
  if (!isValidPath(path)) return false;
  const first = path.slice(0, path.indexOf('/'));
  return first === 'seed' || first === accountId;
}

// ---------------------------------------------------------------- URLs

const FILES_PREFIX = '/files/';

export function publicUrl(ctx: Context, path: string): string {
  return `${ctx.config.publicUrl}${FILES_PREFIX}${path}`;
}

function mac(key: Buffer, path: string, expires: number): string {
  return createHmac('sha256', key).update(`${path}\n${expires}`).digest('base64url');
}

/** A URL for a private object valid for `ttlSeconds` (HMAC-SHA256 over path and expiry). */
export async function signedUrl(ctx: Context, path: string, ttlSeconds = ctx.config.signedUrlTtlSeconds): Promise<string> {
  const expires = Math.floor(Date.now() / 1000) + ttlSeconds;
  const sig = mac(await signingKey(ctx), path, expires);
  return `${publicUrl(ctx, path)}?expires=${expires}&sig=${sig}`;
}

export async function verifySignature(ctx: Context, path: string, expires: string | null, sig: string | null): Promise<'ok' | 'expired' | 'invalid'> {
  if (!expires || !sig || !/^\d{1,12}$/.test(expires) || !/^[A-Za-z0-9_-]{43}$/.test(sig)) return 'invalid';
  const want = Buffer.from(mac(await signingKey(ctx), path, Number(expires)));
  const got = Buffer.from(sig);
  if (want.length !== got.length || !timingSafeEqual(want, got)) return 'invalid';
  return Number(expires) < Date.now() / 1000 ? 'expired' : 'ok';
}

// ---------------------------------------------------------------- sources

/**
 * A transform source → a store path the account may read, or null (treat as not found).
 * Accepts a bucket-relative path, or a public or signed URL of this store (the signature is not
 * needed: ownership is checked on the path). Anything that looks like an escape — `..`, `.`
 * segments, absolute paths, backslashes, percent-encodings, another origin — is refused.
 */
export function resolveSource(ctx: Context, accountId: string, source: unknown): string | null {
  if (typeof source !== 'string' || source.length === 0 || source.length > 2048) return null;
  if (/[\\\u0000-\u001f\u007f]|%|(^|\/)\.\.?(\/|$)/.test(source.split(/[?#]/)[0]!)) return null;
  let path: string;
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(source)) {
    let url: URL;
    let base: URL;
    try {
      url = new URL(source);
      base = new URL(ctx.config.publicUrl);
    } catch {
      return null;
    }
    if (url.origin !== base.origin || url.username || url.password) return null;
    const prefix = base.pathname.replace(/\/+$/, '') + FILES_PREFIX;
    if (!url.pathname.startsWith(prefix)) return null;
    path = url.pathname.slice(prefix.length);
  } else {
    path = source.startsWith(`${BUCKET}/`) ? source.slice(BUCKET.length + 1) : source;
  }
  return canRead(accountId, path) ? path : null;
}
