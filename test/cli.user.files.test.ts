// The user commands' download of a result URL, against a loopback store that answers as told: a
// 503 retried through the client's retrying fetch, error answers typed from their envelope (or
// their status), and Ctrl-C honoured during a pause between attempts.

import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { KilnError } from '../src/client/errors.ts';
import { download } from '../src/cli/user/files.ts';
import { onCleanup } from './_setup.ts';

type Answer = { status: number; headers?: Record<string, string>; body: string };

async function store(answers: Answer[]) {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url!);
    const a = answers[Math.min(hits.length, answers.length) - 1]!;
    res.writeHead(a.status, { 'x-request-id': `store-${hits.length}`, ...a.headers });
    res.end(a.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  onCleanup(async () => { server.closeAllConnections(); await new Promise((r) => server.close(r)); });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/files/a.png`, hits };
}

const unavailable: Answer = { status: 503, headers: { 'retry-after': '0' }, body: '{"error":{"type":"server_error","message":"Briefly unavailable."}}' };

test('download: a 503 retried, then the bytes', async () => {
  const s = await store([unavailable, { status: 200, body: 'PNG' }]);
  assert.equal(new TextDecoder().decode(await download(s.url)), 'PNG');
  assert.equal(s.hits.length, 2);
});

test('download: error answers typed as the client types them, not all as not_found; a 4xx is not retried', async () => {
  const cases: Array<[Answer, { status: number; type: string }]> = [
    [{ status: 403, headers: { 'content-type': 'application/json' }, body: '{"error":{"type":"unauthorized","message":"Signature expired."}}' }, { status: 403, type: 'unauthorized' }],
    [{ status: 404, body: 'no such file' }, { status: 404, type: 'not_found' }],
    [{ status: 500, body: '<html>oops</html>' }, { status: 500, type: 'server_error' }],
  ];
  for (const [answer, expect] of cases) {
    const s = await store([answer]);
    const e = await download(s.url).then(() => assert.fail('expected a KilnError'), (x) => x);
    assert.ok(e instanceof KilnError, String(e));
    assert.deepEqual([e.status, e.type, e.requestId], [expect.status, expect.type, 'store-1']);
    assert.equal(s.hits.length, 1);
  }
  // 503 every time: three attempts, then the 503 itself.
  const s = await store([unavailable]);
  const e = await download(s.url).then(() => assert.fail('expected a KilnError'), (x) => x);
  assert.deepEqual([e.status, e.type, s.hits.length], [503, 'server_error', 3]);
});

test('download: aborting during the pause before a retry ends it at once', async () => {
  const s = await store([{ ...unavailable, headers: { 'retry-after': '30' } }]);
  const ac = new AbortController();
  const downloading = assert.rejects(download(s.url, ac.signal), { message: 'interrupted' });
  // Aborted once the 503 has been answered, not on a timer from the start: on a loaded machine a
  // 100 ms timer fired before the request had even reached the store (0 hits).
  for (const end = Date.now() + 30_000; s.hits.length === 0;) {
    assert.ok(Date.now() < end, 'the download reached the store');
    await new Promise((r) => setTimeout(r, 10));
  }
  await new Promise((r) => setTimeout(r, 100));
  const abortedAt = Date.now();
  ac.abort(new Error('interrupted'));
  await downloading;
  // The pause is retry-after's 30 s.
  assert.ok(Date.now() - abortedAt < 5_000, `ended ${Date.now() - abortedAt} ms after the abort`);
  assert.equal(s.hits.length, 1);
});
