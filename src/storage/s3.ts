// The S3-compatible bucket behind the image store (KILN_STORE=s3): writes, reads, deletes and
// presigned GETs of object bytes. Which key holds which object is decided in store.ts. Every call
// reports to the bucket's health (./health.ts) and fails with a StoreError.

import { randomBytes } from 'node:crypto';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, NoSuchKey, NotFound, PutObjectCommand, S3Client, S3ServiceException, type S3ClientConfig } from '@aws-sdk/client-s3';
import { S3RequestPresigner } from '@aws-sdk/s3-request-presigner';
import type { Config } from '../config.ts';
import { isDownFailure, StoreError, StoreHealth } from './health.ts';

type S3Settings = NonNullable<Config['store']['s3']>;

export class Bucket {
  readonly client: S3Client;
  private readonly presigner: S3RequestPresigner;
  private readonly publicBase: URL;
  /** Whether the bucket answers, from every call's outcome (docs/storage.md, "When the store is down"). */
  readonly health: StoreHealth;

  /** `clientOptions` adds to the client's settings (tests: fixed credentials). */
  constructor(readonly settings: S3Settings, clientOptions: S3ClientConfig = {}) {
    this.client = new S3Client({
      ...clientOptions,
      region: settings.region,
      ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
      forcePathStyle: settings.forcePathStyle,
      // Checksums only where S3 requires them: many S3-compatible servers reject the newer
      // default CRC headers. Integrity is checked by Kiln's own SHA-256 instead.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // A bucket that does not answer fails the call (and is seen as down) instead of holding it forever.
      requestHandler: { connectionTimeout: 5000, requestTimeout: 60_000 },
    });
    this.presigner = new S3RequestPresigner({ ...this.client.config });
    // A HEAD of a key that need not exist: any answer below 500 (404, or 403 without
    // s3:ListBucket) means the store answers.
    this.health = new StoreHealth(() => this.call('check', () => this.client.send(new HeadObjectCommand({ Bucket: this.settings.bucket, Key: `${this.settings.prefix}kiln-store-check` })), true).then(() => {}));
    this.publicBase = new URL(settings.publicEndpoint ?? settings.endpoint ?? `https://s3.${settings.region === 'us-east-1' ? '' : `${settings.region}.`}amazonaws.com`);
  }

  /** A fresh key for a store path: unique per write, so a retried write never replaces committed bytes. */
  keyFor(path: string): string {
    const nonce = randomBytes(6).toString('hex');
    const dot = path.lastIndexOf('.');
    const slash = path.lastIndexOf('/');
    const named = dot > slash ? `${path.slice(0, dot)}.${nonce}${path.slice(dot)}` : `${path}.${nonce}`;
    return `${this.settings.prefix}${named}`;
  }

  /**
   * Runs one SDK call, noting its outcome in `health`; a failure becomes a StoreError (down: no
   * answer, a 5xx or 429). `anyAnswer` (the check): any answer below 500 proves the store up and
   * is passed on as it is.
   */
  private async call<T>(operation: string, fn: () => Promise<T>, anyAnswer = false): Promise<T> {
    try {
      const out = await fn();
      this.health.ok();
      return out;
    } catch (e) {
      const status = (e as { $metadata?: { httpStatusCode?: unknown } } | null)?.$metadata?.httpStatusCode;
      if (anyAnswer && typeof status === 'number' && status < 500 && status !== 429) {
        this.health.ok();
        throw e;
      }
      const down = isDownFailure(e);
      const err = new StoreError(operation, down, e);
      if (down) this.health.failed(err.message);
      else this.health.ok();
      throw err;
    }
  }

  async write(key: string, data: Buffer, contentType: string): Promise<void> {
    await this.call('write', () => this.client.send(new PutObjectCommand({
      Bucket: this.settings.bucket, Key: key, Body: data, ContentType: contentType, ContentLength: data.byteLength,
      // Keys are never reused, so what a cache holds is always right.
      CacheControl: 'private, max-age=31536000, immutable',
    })));
  }

  /** The bytes under `key`, or null when there are none. */
  async read(key: string): Promise<Buffer | null> {
    const body = await this.open(key);
    // The body may break off after the answer began (a reset): the read failed, the store is down.
    return body ? Buffer.from(await this.call('read', () => body.transformToByteArray())) : null;
  }

  /** A stream of the bytes under `key`, or null when there are none. */
  async open(key: string) {
    const missing = Symbol('missing');
    const res = await this.call('read', async () => {
      try {
        return await this.client.send(new GetObjectCommand({ Bucket: this.settings.bucket, Key: key }));
      } catch (e) {
        // A missing key is an answer, not an outage.
        if (e instanceof NoSuchKey || (e instanceof S3ServiceException && e.$metadata.httpStatusCode === 404)) return missing;
        throw e;
      }
    });
    return res === missing ? null : (res.Body ?? null);
  }

  /** Whether bytes are stored under `key` (a HEAD: nothing is downloaded). */
  async exists(key: string): Promise<boolean> {
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.settings.bucket, Key: key }));
      return true;
    } catch (e) {
      if (e instanceof NotFound || e instanceof NoSuchKey || (e instanceof S3ServiceException && e.$metadata.httpStatusCode === 404)) return false;
      throw e;
    }
  }

  /** Deletes keys; a key already gone is fine. */
  async remove(keys: string[]): Promise<void> {
    for (const key of keys) {
      await this.call('delete', () => this.client.send(new DeleteObjectCommand({ Bucket: this.settings.bucket, Key: key })));
    }
  }

  /**
   * A presigned GET of `key` valid for `expiresIn` seconds: SigV4 query-string authentication
   * with UNSIGNED-PAYLOAD and only `host` signed, exactly AWS's documented form (the SDK's
   * getSignedUrl adds `x-id` and `X-Amz-Content-Sha256` to the query, which is also accepted but
   * is not the published example; test/store.s3.test.ts checks this against AWS's vector).
   */
  async presign(key: string, expiresIn: number, signingDate = new Date()): Promise<string> {
    const base = this.publicBase;
    const pathStyle = this.settings.forcePathStyle || !this.settings.bucket.match(/^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/);
    const hostname = pathStyle ? base.hostname : `${this.settings.bucket}.${base.hostname}`;
    const basePath = base.pathname.replace(/\/+$/, '');
    const encodedKey = key.split('/').map(encodeRfc3986).join('/');
    const path = pathStyle ? `${basePath}/${encodeRfc3986(this.settings.bucket)}/${encodedKey}` : `${basePath}/${encodedKey}`;
    const port = base.port ? Number(base.port) : undefined;
    const host = port ? `${hostname}:${port}` : hostname;
    const signed = await this.presigner.presign(
      { method: 'GET', protocol: base.protocol, hostname, port, path, query: {}, headers: { host } } as never,
      {
        expiresIn,
        signingDate,
        unhoistableHeaders: new Set(['x-amz-content-sha256']),
        unsignableHeaders: new Set(['x-amz-content-sha256']),
      },
    );
    const query = Object.entries(signed.query as Record<string, string>)
      .map(([k, v]) => `${encodeRfc3986(k)}=${encodeRfc3986(v)}`)
      .join('&');
    return `${base.protocol}//${host}${path}?${query}`;
  }
}

function encodeRfc3986(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

const buckets = new WeakMap<object, Bucket>();

/** The process's bucket client for these settings (one per configuration object). */
export function bucketFor(settings: S3Settings): Bucket {
  let b = buckets.get(settings);
  if (!b) buckets.set(settings, (b = new Bucket(settings)));
  return b;
}
