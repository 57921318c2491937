// The S3 backend end to end against s3rver on loopback: generation outputs, transform outputs
// and run outputs land in the bucket (rows in Postgres, bytes not), /files answers 302 to a
// presigned GET that ends no later than the Kiln URL (or streams with KILN_S3_REDIRECT=0), bad
// and expired signatures are refused, and the presigner matches AWS's published SigV4 example.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { before, test } from 'node:test';
import { Bucket } from '../src/storage/s3.ts';
import { signedUrl } from '../src/storage/store.ts';
import { startTestWorker, waitFor } from './_generations.ts';
import { startS3, stopWorker, type TestS3 } from './_s3.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { saveWorkflow, startRun, waitRun } from './_workflows.ts';

let s3: TestS3;
let srv: TestServer;
let account: string;
let key: string;
let worker: { stop(): Promise<void> };

before(async () => {
  s3 = await startS3();
  srv = await startServer({ config: { store: s3.store() } });
  worker = await startTestWorker(srv);
  account = (await createAccount(srv.db.sql)).id;
  key = (await createKey(srv.db.sql, account)).key;
});

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

async function row(path: string) {
  const [r] = await srv.db.sql`select backend, location, data is null as no_data, byte_size, encode(sha256, 'hex') as sha from kiln_private.objects where path = ${path}`;
  return r as { backend: string; location: string; no_data: boolean; byte_size: number; sha: string };
}

/** Follows a /files URL by hand: the 302, its presigned target, and the bytes there. */
async function viaRedirect(url: string, kilnExpires: number | null) {
  const res = await fetch(url, { redirect: 'manual' });
  assert.equal(res.status, 302, `${url} → ${res.status} ${await res.text()}`);
  const location = res.headers.get('location')!;
  assert.ok(location.startsWith(`${s3.endpoint}/${s3.bucket}/`), location);
  const q = new URL(location).searchParams;
  const date = q.get('X-Amz-Date')!;
  const start = Date.UTC(+date.slice(0, 4), +date.slice(4, 6) - 1, +date.slice(6, 8), +date.slice(9, 11), +date.slice(11, 13), +date.slice(13, 15)) / 1000;
  const end = start + Number(q.get('X-Amz-Expires'));
  if (kilnExpires !== null) assert.ok(end <= kilnExpires, `presigned until ${end}, Kiln URL until ${kilnExpires}`);
  assert.equal(q.get('X-Amz-SignedHeaders'), 'host');
  const got = await fetch(location);
  assert.equal(got.status, 200);
  return { location, type: got.headers.get('content-type'), data: Buffer.from(await got.arrayBuffer()) };
}

test('presigned GETs match AWS\'s published SigV4 query-string example', async () => {
  // https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html ("An Example")
  const bucket = new Bucket(
    { bucket: 'examplebucket', endpoint: undefined, publicEndpoint: undefined, region: 'us-east-1', forcePathStyle: false, prefix: '', redirect: true },
    { credentials: { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' } },
  );
  const url = await bucket.presign('test.txt', 86400, new Date('2013-05-24T00:00:00Z'));
  assert.equal(url,
    'https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256' +
    '&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request' +
    '&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host' +
    '&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404');
});

test('a generation\'s image goes to the bucket and its signed URL redirects to a presigned GET', async () => {
  const created = await api(srv.base, key, '/generations', { body: { type: 'image', prompt: 'a kiln at dusk', model: 'local/sketch' } });
  assert.equal(created.status, 202, JSON.stringify(created.body));
  const done = await waitFor(srv, key, created.body.id, { timeoutMs: 30_000 });
  assert.equal(done.status, 'completed', JSON.stringify(done));
  const url = new URL(done.result.url);
  const path = url.pathname.slice('/files/'.length);
  const r = await row(path);
  assert.equal(r.backend, 's3');
  assert.ok(r.no_data, 'no bytes in Postgres');
  assert.ok((await s3.keys()).includes(r.location), 'the bytes are in the bucket under the row\'s key');

  const got = await viaRedirect(url.href, Number(url.searchParams.get('expires')));
  assert.equal(got.type, 'image/png');
  assert.equal(got.data.length, r.byte_size);
  assert.equal(sha(got.data), r.sha);

  // Refused as before: a tampered signature, an expired Kiln URL (before any redirect).
  const bad = new URL(url);
  bad.searchParams.set('sig', 'A'.repeat(43));
  const tampered = await fetch(bad, { redirect: 'manual' });
  assert.equal(tampered.status, 403);
  assert.equal((await tampered.json()).error.type, 'unauthorized');
  const old = await fetch(await signedUrl(srv.ctx, path, -5), { redirect: 'manual' });
  assert.equal(old.status, 403);
  assert.match((await old.json()).error.message, /expired/);
  const unsigned = await fetch(`${srv.origin}/files/${path}`, { redirect: 'manual' });
  assert.equal(unsigned.status, 404, 'a private object needs a signature on s3 too');

  // A short Kiln URL gets a presigned GET no longer than itself, and s3rver enforces its end.
  const short = new URL(await signedUrl(srv.ctx, path, 2));
  const brief = await viaRedirect(short.href, Number(short.searchParams.get('expires')));
  await new Promise((res) => setTimeout(res, 3500));
  const late = await fetch(brief.location);
  assert.equal(late.status, 403, 'the presigned GET expired with the Kiln URL');

  // KILN_S3_REDIRECT=0: another API process on the same database streams the bytes through.
  const streaming = await startServer({ db: srv.db, config: { store: s3.store({ redirect: false }) } });
  const res = await fetch(`${streaming.origin}${url.pathname}${url.search}`, { redirect: 'manual' });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'image/png');
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(Number(res.headers.get('content-length')), r.byte_size);
  assert.equal(sha(Buffer.from(await res.arrayBuffer())), r.sha);
});

test('transforms read their source from the bucket and store a public result there', async () => {
  const created = await api(srv.base, key, '/generations', { body: { type: 'image', prompt: 'a glaze test', model: 'local/sketch' } });
  const done = await waitFor(srv, key, created.body.id, { timeoutMs: 30_000 });
  const t = await api(srv.base, key, '/images/transforms', { body: { source: done.result.url, op: 'convert', options: { format: 'webp' } } });
  assert.equal(t.status, 200, JSON.stringify(t.body));
  const r = await row(t.body.path);
  assert.equal(r.backend, 's3');
  const got = await viaRedirect(t.body.url, null);
  assert.equal(got.type, 'image/webp');
  assert.equal(got.data.length, t.body.bytes);
  // Seeds are sources too (they stay wherever migrate put them: here, Postgres).
  const seed = await api(srv.base, key, '/images/transforms', { body: { source: 'seed/logo.png', op: 'trim' } });
  assert.equal(seed.status, 200, JSON.stringify(seed.body));
  assert.equal((await row(seed.body.path)).backend, 's3');
});

test('workflow run outputs land in the bucket and their URLs redirect', async () => {
  const wf = await saveWorkflow(srv, account, {
    nodes: [
      { id: 'p', kind: 'prompt', output: 'image', prompt: 'Hero image', model: 'local/sketch' }, { id: 'o', kind: 'output', label: 'Hero' },
      // The second prompt reads the first output's image from the bucket.
      { id: 'p2', kind: 'prompt', output: 'image', prompt: 'A variation', model: 'local/sketch' }, { id: 'o2', kind: 'output' },
    ],
    edges: [{ from: 'p', to: 'o' }, { from: 'o', to: 'p2' }, { from: 'p2', to: 'o2' }],
  });
  const run = await startRun(srv, key, wf);
  const done = await waitRun(srv, key, wf, run, { timeoutMs: 30_000 });
  assert.equal(done.status, 'completed', JSON.stringify(done));
  for (const result of done.results) {
    const url = new URL(result.url);
    const r = await row(url.pathname.slice('/files/'.length));
    assert.equal(r.backend, 's3');
    const got = await viaRedirect(url.href, Number(url.searchParams.get('expires')));
    assert.equal(sha(got.data), r.sha);
  }
  await stopWorker(srv, worker); // the last test: its connections closed before the database is dropped
});
