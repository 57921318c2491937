// POST /images/transforms over real HTTP: every op on the seed images, the stored object matches
// the response, ownership and path-escape rules, bad input never a 500, and no billing.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import sharp from 'sharp';
import { putObject } from '../src/storage/store.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

let srv: TestServer;
let key: string;
let accountId: string;

before(async () => {
  srv = await startServer({ config: { transformRpm: 1000 } });
  const a = await createAccount(srv.db.sql);
  accountId = a.id;
  key = (await createKey(srv.db.sql, a.id)).key;
});

const transform = (body: unknown, k = key) => api(srv.base, k, '/images/transforms', { body });

async function fetchStored(url: string) {
  const res = await fetch(url);
  assert.equal(res.status, 200, `GET ${url}`);
  const buf = Buffer.from(await res.arrayBuffer());
  return { buf, meta: await sharp(buf).metadata(), type: res.headers.get('content-type') };
}

test('seed images are loaded at migrate time and readable by everyone', async () => {
  const rows = await srv.db.sql`select path, width, height, format from kiln_private.objects where path like 'seed/%' order by path`;
  assert.deepEqual(rows.map((r) => r.path), ['seed/logo.png', 'seed/photo.jpg', 'seed/transparent.png']);
});

test('convert to each format; the stored object matches the response', async () => {
  for (const format of ['png', 'jpeg', 'webp', 'avif'] as const) {
    const res = await transform({ source: 'seed/photo.jpg', op: 'convert', options: { format, maxDimension: 400 } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const b = res.body;
    assert.deepEqual(Object.keys(b).sort(), ['bytes', 'format', 'height', 'path', 'trimmed', 'url', 'width', 'withinTarget']);
    assert.equal(b.format, format);
    assert.equal(Math.max(b.width, b.height), 400);
    assert.equal(b.withinTarget, null);
    assert.equal(b.trimmed, null);
    assert.match(b.path, new RegExp(`^${accountId}/transforms/[0-9a-f-]{36}\\.`));
    const stored = await fetchStored(b.url);
    assert.equal(stored.buf.length, b.bytes);
    assert.equal(stored.meta.width, b.width);
    assert.equal(stored.meta.height, b.height);
    assert.equal(stored.meta.format === 'heif' ? 'avif' : stored.meta.format, format);
  }
});

test('maxDimension never enlarges; quality changes size', async () => {
  const big = await transform({ source: 'seed/logo.png', op: 'convert', options: { format: 'webp', maxDimension: 8192 } });
  const [seed] = await srv.db.sql`select width, height from kiln_private.objects where path = 'seed/logo.png'`;
  assert.equal(big.body.width, seed.width);
  assert.equal(big.body.height, seed.height);
  const lo = await transform({ source: 'seed/photo.jpg', op: 'convert', options: { format: 'jpeg', quality: 0.3 } });
  const hi = await transform({ source: 'seed/photo.jpg', op: 'convert', options: { format: 'jpeg', quality: 0.95 } });
  assert.ok(lo.body.bytes < hi.body.bytes, `${lo.body.bytes} < ${hi.body.bytes}`);
});

test('compress reaches a byte target, or stores the smallest encode with withinTarget false', async () => {
  const res = await transform({ source: 'seed/photo.jpg', op: 'compress', options: { targetBytes: 40_000 } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.format, 'webp');
  assert.equal(res.body.withinTarget, true);
  assert.ok(res.body.bytes <= 40_000 && res.body.bytes > 30_000, String(res.body.bytes));
  const un = await transform({ source: 'seed/photo.jpg', op: 'compress', options: { targetBytes: 10_240, format: 'png' } });
  assert.equal(un.status, 200);
  if (un.body.withinTarget === false) assert.ok(un.body.bytes > 10_240);
  const stored = await fetchStored(res.body.url);
  assert.equal(stored.buf.length, res.body.bytes);
});

test('trim cuts uniform margins; nothing to cut stores nothing', async () => {
  const res = await transform({ source: 'seed/logo.png', op: 'trim' });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.trimmed, true);
  const [seed] = await srv.db.sql`select width, height from kiln_private.objects where path = 'seed/logo.png'`;
  assert.ok(res.body.width < seed.width && res.body.height < seed.height);
  const transparent = await transform({ source: 'seed/transparent.png', op: 'trim' });
  assert.equal(transparent.body.trimmed, true);
  // Trimming the already-trimmed result cuts nothing.
  const [{ n: before }] = await srv.db.sql`select count(*)::int as n from kiln_private.objects`;
  const again = await transform({ source: res.body.path, op: 'trim' });
  assert.equal(again.status, 200);
  assert.deepEqual(again.body, { url: null, path: null, width: null, height: null, bytes: null, format: null, withinTarget: null, trimmed: false });
  const [{ n: after }] = await srv.db.sql`select count(*)::int as n from kiln_private.objects`;
  assert.equal(after, before);
});

test('sources by public URL and signed URL resolve; another account\'s object is a 404', async () => {
  const conv = await transform({ source: 'seed/photo.jpg', op: 'convert', options: { format: 'png', maxDimension: 64 } });
  const viaUrl = await transform({ source: conv.body.url, op: 'convert', options: { format: 'webp' } });
  assert.equal(viaUrl.status, 200);
  const signed = await transform({ source: `${conv.body.url}?expires=1&sig=abc`, op: 'convert', options: { format: 'webp' } });
  assert.equal(signed.status, 200, 'ownership is checked on the path, not the signature');
  const other = await createAccount(srv.db.sql);
  const otherKey = (await createKey(srv.db.sql, other.id)).key;
  const stolen = await transform({ source: conv.body.path, op: 'trim' }, otherKey);
  assert.equal(stolen.status, 404);
  assert.equal(stolen.body.error.type, 'not_found');
  const missing = await transform({ source: `${accountId}/transforms/00000000-0000-0000-0000-000000000000.png`, op: 'trim' });
  assert.equal(missing.status, 404);
  assert.deepEqual(missing.body.error.message, stolen.body.error.message, 'missing and not-owned look the same');
});

test('path escapes are refused and never read outside the store', async () => {
  for (const source of [
    '../etc/passwd', '/etc/passwd', 'seed/../etc/passwd', 'seed/..%2f..%2fetc/passwd', 'seed\\..\\x.png',
    'file:///etc/passwd', 'http://169.254.169.254/latest/meta-data', `${srv.origin.replace('127.0.0.1', 'localhost')}/files/seed/logo.png`,
    `${srv.origin}/files/../../etc/passwd`, 'seed/./logo.png', 'seed//logo.png', `${accountId}/../seed/logo.png`,
  ]) {
    const res = await transform({ source, op: 'trim' });
    assert.ok(res.status === 400 || res.status === 404, `${source}: ${res.status}`);
    assert.ok(res.body.error, source);
  }
});

test('bad input is a 400 envelope, never a 500, and the server stays up', async () => {
  const put = (name: string, data: Buffer, format = 'png') =>
    putObject(srv.ctx, { path: `${accountId}/uploads/${name}`, owner: accountId, data, contentType: `image/${format}`, format: format as any, width: 1, height: 1, visibility: 'private' });
  await put('corrupt.png', Buffer.from('\x89PNG\r\n\x1a\nthis is not really a png at all'));
  const bomb = await sharp({ create: { width: 10_000, height: 10_000, channels: 3, background: '#fff' } }).png({ compressionLevel: 9 }).toBuffer();
  await put('bomb.png', bomb);
  await put('huge.png', Buffer.alloc(10 * 1024 * 1024 + 1, 1));
  const cases: Array<[unknown, RegExp]> = [
    [{ source: `${accountId}/uploads/corrupt.png`, op: 'convert', options: { format: 'webp' } }, /./],
    [{ source: `${accountId}/uploads/bomb.png`, op: 'convert', options: { format: 'webp' } }, /pixel|large|dimension/i],
    [{ source: `${accountId}/uploads/huge.png`, op: 'trim' }, /10 MB/],
    [{ source: 'seed/logo.png', op: 'rotate' }, /op/],
    [{ source: 'seed/logo.png', op: 'convert' }, /format/],
    [{ source: 'seed/logo.png', op: 'compress' }, /targetBytes/],
    [{ source: 'seed/logo.png', op: 'compress', options: { targetBytes: 100 } }, /targetBytes/],
    [{ source: 'seed/logo.png', op: 'convert', options: { format: 'gif' } }, /format/],
    [{ source: 'seed/logo.png', op: 'convert', options: { format: 'png', quality: 0 } }, /quality/],
    [{ source: 'seed/logo.png', op: 'convert', options: { format: 'png', maxDimension: 0 } }, /maxDimension/],
    [{ op: 'trim' }, /source/],
    ['{not json', /JSON/],
    [[1, 2], /./],
  ];
  for (const [body, msg] of cases) {
    const res = await transform(body);
    assert.equal(res.status, 400, `${JSON.stringify(body)} → ${res.status} ${JSON.stringify(res.body)}`);
    assert.equal(res.body.error.type, 'invalid_request');
    assert.match(res.body.error.message, msg);
    assert.ok(res.headers.get('x-request-id'));
  }
  assert.equal((await transform({ source: 'seed/logo.png', op: 'trim' })).status, 200, 'still serving');
});

test('scope, rate limit, and transforms never touch the budget or ledger', async () => {
  const a = await createAccount(srv.db.sql);
  const ro = (await createKey(srv.db.sql, a.id, { scopes: ['read'] })).key;
  const denied = await transform({ source: 'seed/logo.png', op: 'trim' }, ro);
  assert.equal(denied.status, 403);
  assert.equal(denied.body.error.type, 'insufficient_scope');
  assert.equal((await transform({ source: 'seed/logo.png', op: 'trim' }, 'nope')).status, 401);

  const limited = await startServer({ db: srv.db, config: { transformRpm: 2 } });
  const k1 = (await createKey(srv.db.sql, a.id)).key;
  const k2 = (await createKey(srv.db.sql, a.id)).key;
  const r1 = await api(limited.base, k1, '/images/transforms', { body: { source: 'seed/logo.png', op: 'trim' } });
  const r2 = await api(limited.base, k2, '/images/transforms', { body: { source: 'seed/logo.png', op: 'trim' } });
  const r3 = await api(limited.base, k1, '/images/transforms', { body: { source: 'seed/logo.png', op: 'trim' } });
  assert.deepEqual([r1.status, r2.status, r3.status], [200, 200, 429], 'the transform bucket is per user, across keys');
  assert.equal(r3.body.error.type, 'rate_limited');
  assert.match(r3.headers.get('retry-after')!, /^\d+$/);
  await limited.close();

  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.charges`;
  assert.equal(n, 0);
  const [{ u }] = await srv.db.sql`select coalesce(sum(held_micros + settled_micros), 0)::int as u from kiln_private.budget_periods`;
  assert.equal(u, 0);
});
