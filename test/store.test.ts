// The image store: objects in Postgres, the files route (public, signed, expired, tampered),
// the shared signing secret, and resolveSource's ownership and path-escape rules.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, test } from 'node:test';
import { createContext } from '../src/context.ts';
import { png } from './_openai-peer.ts';
import { createAccount, startServer, testConfig, type TestServer } from './_setup.ts';
import { getObject, objectPath, publicUrl, putObject, resolveSource, signedUrl } from '../src/storage/store.ts';

let srv: TestServer;
let alice: string;
let bob: string;
let image: Buffer;

before(async () => {
  srv = await startServer();
  alice = (await createAccount(srv.db.sql)).id;
  bob = (await createAccount(srv.db.sql)).id;
  image = await png(8, 4);
});

async function put(owner: string | null, path: string, visibility: 'public' | 'private') {
  return putObject(srv.ctx, { path, owner, data: image, contentType: 'image/png', format: 'png', width: 8, height: 4, visibility });
}

test('objects round-trip through Postgres with their metadata', async () => {
  const path = objectPath(alice, 'transforms', 'png');
  assert.match(path, new RegExp(`^${alice}/transforms/[0-9a-f-]{36}\\.png$`));
  const meta = await put(alice, path, 'public');
  assert.deepEqual({ ...meta, createdAt: undefined }, {
    path, ownerId: alice, contentType: 'image/png', format: 'png', width: 8, height: 4, bytes: image.length, visibility: 'public', createdAt: undefined,
  });
  const obj = await getObject(srv.ctx, path);
  assert.ok(obj && obj.data.equals(image));
  assert.equal(await getObject(srv.ctx, `${alice}/transforms/${randomUUID()}.png`), null);
});

test('the store refuses overwrites, foreign prefixes and bad paths', async () => {
  const path = objectPath(alice, 'transforms', 'png');
  await put(alice, path, 'public');
  await assert.rejects(put(alice, path, 'public'), (e: any) => e.code === 'KC001');
  await assert.rejects(put(bob, `${alice}/transforms/${randomUUID()}.png`, 'public'), (e: any) => e.code === 'KI001');
  await assert.rejects(put(alice, `seed/${randomUUID()}.png`, 'public'), (e: any) => e.code === 'KI001');
  await assert.rejects(put(alice, `${alice}/../x.png`, 'public'), /invalid object path/);
});

test('public objects are served to anyone with long-lived caching; private ones only when signed', async () => {
  const pub = objectPath(alice, 'transforms', 'png');
  await put(alice, pub, 'public');
  const res = await fetch(publicUrl(srv.ctx, pub));
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'image/png');
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  assert.match(res.headers.get('cache-control')!, /^public, max-age=\d+, immutable$/);
  assert.ok(Buffer.from(await res.arrayBuffer()).equals(image));

  const priv = objectPath(alice, 'generations', 'png');
  await put(alice, priv, 'private');
  const bare = await fetch(publicUrl(srv.ctx, priv));
  assert.equal(bare.status, 404);
  const missing = await fetch(publicUrl(srv.ctx, objectPath(alice, 'generations', 'png')));
  assert.equal(bare.status, missing.status, 'a private object looks exactly like a missing one');
  assert.deepEqual(await bare.json(), await missing.json());

  const url = await signedUrl(srv.ctx, priv, 60);
  const ok = await fetch(url);
  assert.equal(ok.status, 200);
  assert.match(ok.headers.get('cache-control')!, /^private, max-age=(5\d|60)$/);
  assert.ok(Buffer.from(await ok.arrayBuffer()).equals(image));
});

test('tampered, transplanted and expired signatures are refused', async () => {
  const priv = objectPath(alice, 'generations', 'png');
  const other = objectPath(alice, 'generations', 'png');
  await put(alice, priv, 'private');
  await put(alice, other, 'private');
  const url = new URL(await signedUrl(srv.ctx, priv, 60));
  const sig = url.searchParams.get('sig')!;
  const variants = [
    `${url.origin}${url.pathname}?expires=${url.searchParams.get('expires')}&sig=${sig.slice(0, -2)}${sig.endsWith('AA') ? 'BB' : 'AA'}`,
    `${url.origin}${url.pathname}?expires=${Number(url.searchParams.get('expires')) + 3600}&sig=${sig}`,
    `${url.origin}/files/${other}${url.search}`,
    `${url.origin}${url.pathname}?sig=${sig}`,
  ];
  for (const v of variants) {
    const res = await fetch(v);
    assert.equal(res.status, 403, v);
    assert.equal((await res.json()).error.type, 'unauthorized');
  }
  const expired = await fetch(await signedUrl(srv.ctx, priv, -5));
  assert.equal(expired.status, 403);
  assert.match((await expired.json()).error.message, /expired/);
});

test('the signing secret is generated once and shared by every process on the database', async () => {
  const path = objectPath(alice, 'generations', 'png');
  await put(alice, path, 'private');
  // Another "process": a separate context on the same database signs identically.
  const other = createContext(testConfig({ publicUrl: srv.origin }), srv.db.app);
  const theirs = await signedUrl(other, path, 120);
  assert.equal((await fetch(theirs)).status, 200);
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.secrets where name = 'url_signing'`;
  assert.equal(n, 1);
  // A configured secret replaces it (and old URLs stop working for that process).
  const configured = createContext(testConfig({ publicUrl: srv.origin, urlSigningSecret: 'x'.repeat(40) }), srv.db.app);
  assert.notEqual(new URL(await signedUrl(configured, path, 120)).searchParams.get('sig'), new URL(theirs).searchParams.get('sig'));
});

test('files route: escapes, encodings and junk are 404s, never a read outside the store', async () => {
  const seedPath = `seed/${randomUUID()}.png`;
  await put(null, seedPath, 'public');
  const raw = async (p: string) => {
    // Raw request path: fetch() would normalise `..` away before sending.
    const http = await import('node:http');
    return new Promise<number>((resolve, reject) => {
      const u = new URL(srv.origin);
      http.get({ host: u.hostname, port: u.port, path: p }, (res) => { res.resume(); resolve(res.statusCode!); }).on('error', reject);
    });
  };
  assert.equal(await raw(`/files/${seedPath}`), 200);
  for (const p of [
    '/files/../package.json', '/files/seed/../../package.json', `/files/${seedPath.replace('/', '%2f')}`,
    '/files/seed/%2e%2e/x.png', '/files/%2e%2e/%2e%2e/etc/passwd', '/files/seed\\..\\x.png', '/files/', '/files/seed',
    `/files//${seedPath}`, '/files/etc/passwd', `/files/${seedPath}%00`,
  ]) {
    const status = await raw(p);
    assert.ok(status === 404 || status === 400, `${p} → ${status}`);
  }
});

test('resolveSource: own paths, seed images and this store\'s URLs resolve; everything else is null', async () => {
  const mine = `${alice}/transforms/${randomUUID()}.png`;
  const theirs = `${bob}/transforms/${randomUUID()}.png`;
  const signed = await signedUrl(srv.ctx, mine, 60);
  const ok: Array<[string, string]> = [
    [mine, mine],
    ['seed/logo.png', 'seed/logo.png'],
    ['seed/photos/beach.jpg', 'seed/photos/beach.jpg'],
    [`workflow-images/${mine}`, mine],
    [publicUrl(srv.ctx, mine), mine],
    [signed, mine],
    [`${publicUrl(srv.ctx, mine)}#frag`, mine],
  ];
  for (const [source, want] of ok) assert.equal(resolveSource(srv.ctx, alice, source), want, source);
  const refused = [
    theirs, publicUrl(srv.ctx, theirs), `/${mine}`, `${alice}/../${theirs}`, `${alice}/transforms/../../${theirs}`,
    `seed/../${theirs}`, `${alice}/./transforms/x.png`, `${alice}\\transforms\\x.png`, `${alice}/transforms/%2e%2e/x.png`,
    `${alice}%2ftransforms%2fx.png`, `${alice}/transforms/x.png%00`, `${alice}//x.png`, `${alice}/`, alice, '', 'seed/',
    `https://evil.example/files/${mine}`, `${srv.origin.replace('127.0.0.1', 'localhost')}/files/${mine}`,
    `${srv.origin}/files/../files/${mine}`, `${srv.origin}/api/v1/${mine}`, `file:///etc/passwd`, `/etc/passwd`,
    `${srv.origin.replace('//', '//user:pw@')}/files/${mine}`, `${alice.toUpperCase()}/transforms/x.png`, 'x'.repeat(3000),
  ];
  for (const source of refused) assert.equal(resolveSource(srv.ctx, alice, source), null, source);
  assert.equal(resolveSource(srv.ctx, alice, 42), null);
});
