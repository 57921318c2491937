// HEAD on the real server, across the app's own route table (so a new route is covered without
// touching this file): every path answers HEAD with GET's status and headers and no content
// (RFC 9110 §9.3.2), with a key and without one. Both requests go over a raw socket, so a body
// sent after a HEAD response would be seen rather than dropped by a client.

import assert from 'node:assert/strict';
import net from 'node:net';
import { before, test } from 'node:test';
import { startMcpServer } from './_mcp.ts';
import { api, createAccount, createKey, type TestServer } from './_setup.ts';
import { example, saveWorkflow, startRun } from './_workflows.ts';

let srv: TestServer;
let key: string;
/** Values for a route's parameters, by the path segment before them. */
const ids: Record<string, string> = {};

before(async () => {
  // MCP mounted (a loopback issuer) and webhooks to loopback allowed: every mount is in the table.
  srv = await startMcpServer({ config: { webhookAllowPrivate: true } });
  const a = await createAccount(srv.db.sql);
  // Every scope, on an admin: the keys, audit and admin routes answer 200 too.
  await srv.db.sql`select kiln.set_account_admin(${a.id}, true)`;
  const made = await createKey(srv.db.sql, a.id, { scopes: ['read', 'write', 'keys', 'admin'] });
  key = made.key;
  ids.keys = made.id;
  ids.accounts = a.id;
  const [ws] = await srv.db.sql`select * from kiln.create_workspace('Head check', ${a.id})`;
  ids.workspaces = ws!.id;
  const gen = await api(srv.base, key, '/generations', { body: { type: 'code', prompt: 'hello' } });
  assert.equal(gen.status, 202, JSON.stringify(gen.body));
  ids.generations = gen.body.id;
  ids.workflows = await saveWorkflow(srv, a.id, example('landing-from-image'));
  ids.runs = await startRun(srv, key, ids.workflows);
  const hook = await api(srv.base, key, '/webhooks', { body: { url: 'http://127.0.0.1:9/hook' } });
  assert.equal(hook.status, 201, JSON.stringify(hook.body));
  ids.webhooks = hook.body.id;
  const batch = await fetch(`${srv.base}/batches`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/jsonl' },
    body: `${JSON.stringify({ custom_id: 'one', method: 'POST', url: '/api/v1/generations', body: { type: 'code', prompt: 'hello' } })}\n`,
  });
  assert.equal(batch.status, 202);
  ids.batches = ((await batch.json()) as { id: string }).id;
});

interface Exchange {
  status: number;
  headers: Array<[string, string]>;
  /** Everything after the header block (GET: not read). */
  body: Buffer;
}

/** One request on its own connection. GET: the status line and headers; HEAD: everything until the server closes. */
function exchange(method: 'GET' | 'HEAD', path: string, headers: Record<string, string>): Promise<Exchange> {
  const { hostname, port, host } = new URL(srv.origin);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    const lines = Object.entries({ host, connection: 'close', ...headers }).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    socket.write(`${method} ${path} HTTP/1.1\r\n${lines}\r\n`);
    let buf = Buffer.alloc(0);
    let head: Omit<Exchange, 'body'> | null = null;
    let split = -1;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`${method} ${path}: no ${head ? 'end' : 'answer'} within 10 s`));
    }, 10_000);
    const finish = (x: Exchange) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(x);
    };
    socket.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      if (head) return;
      split = buf.indexOf('\r\n\r\n');
      if (split < 0) return;
      const [statusLine, ...fields] = buf.subarray(0, split).toString('latin1').split('\r\n');
      head = {
        status: Number(statusLine!.split(' ')[1]),
        headers: fields.map((f) => {
          const i = f.indexOf(':');
          return [f.slice(0, i).toLowerCase(), f.slice(i + 1).trim()] as [string, string];
        }),
      };
      // An event stream never ends: GET's answer is its status and headers.
      if (method === 'GET') finish({ ...head, body: Buffer.alloc(0) });
    });
    socket.on('end', () => {
      if (head) finish({ ...head, body: buf.subarray(split + 4) });
      else reject(new Error(`${method} ${path}: connection closed without an answer`));
    });
    socket.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

/**
 * Header fields a HEAD answer must share with GET's. `date` moves on; Transfer-Encoding describes
 * the content and RFC 9112 §6.1 leaves it out of a HEAD answer at the server's choice (Node does).
 */
function comparable(headers: Array<[string, string]>): Array<[string, string]> {
  return headers.filter(([k]) => k !== 'date' && k !== 'transfer-encoding').sort(([a, x], [b, y]) => a.localeCompare(b) || x.localeCompare(y));
}

/** Concrete paths for the app's route table: parameters from the resources made above, `**` from the pages' own links. */
async function pathsOfRouteTable(): Promise<{ paths: string[]; gets: string[] }> {
  // `app.all` routes (the 405s, the catch-all, MCP) hold the method '' and answer GET too.
  const routes = srv.app['~routes'].flatMap((r) => {
    const method = (r.method ?? '') as string;
    return (method === 'GET' || method === '') && r.route ? [{ method, route: r.route }] : [];
  });
  assert.ok(routes.length >= 20, `the route table holds the app's routes (${routes.length})`);
  const fill = (route: string) =>
    route.replace(/\/:(\w+)/g, (_, name: string, at: number) => {
      const before = route.slice(0, at).split('/').pop()!;
      return `/${ids[name === 'runId' ? 'runs' : before] ?? '01890000-0000-7000-8000-000000000000'}`;
    });
  const plain = [...new Set(routes.map((r) => fill(r.route)))];
  // Redirect targets (/ → /console/) and links on the HTML pages (the console's and the API
  // reference's assets), followed from page to page, fill the wildcards and are checked themselves.
  const links = new Set<string>();
  const queue = plain.filter((p) => !p.includes('*'));
  for (const p of queue) {
    const res = await fetch(srv.origin + p, { redirect: 'manual' });
    const found: string[] = [];
    const location = res.headers.get('location');
    if (location?.startsWith('/')) found.push(location);
    const text = (res.headers.get('content-type') ?? '').startsWith('text/html') ? await res.text() : (await res.body?.cancel(), '');
    for (const m of text.matchAll(/(?:src|href)="(\/[^"/][^"]*)"/g)) found.push(m[1]!);
    for (const l of found) {
      if (links.has(l)) continue;
      links.add(l);
      queue.push(l);
    }
  }
  // The catch-all answers a path nothing else serves; a shared seed image stands for the store.
  const samples: Record<string, string> = { '/': '/no-such-page', '/files/': '/files/seed/logo.png' };
  const paths = new Set<string>(links);
  for (const p of plain) {
    if (!p.includes('**')) {
      paths.add(p);
      continue;
    }
    const prefix = p.slice(0, p.indexOf('**'));
    paths.add(samples[prefix] ?? [...links].find((l) => l.startsWith(prefix) && l !== prefix) ?? `${prefix}no-such-thing`);
  }
  const gets = routes.filter((r) => r.method === 'GET' && !r.route.includes('*')).map((r) => fill(r.route));
  return { paths: [...paths].sort(), gets };
}

test('HEAD answers every route of the table as GET does, without content', async () => {
  const { paths, gets } = await pathsOfRouteTable();
  // The routes the issue found broken are among them, and answer as they should.
  for (const p of ['/', '/healthz', '/readyz', '/console/', '/docs', '/api/v1/openapi.json', '/api/v1/models', '/mcp']) {
    assert.ok(paths.includes(p), `${p} is in the route table`);
  }
  const seen = new Map<string, number>();
  let n = 0;
  for (const path of paths) {
    for (const auth of [{ authorization: `Bearer ${key}` }, {}] as Array<Record<string, string>>) {
      const headers = { ...auth, 'x-request-id': `head-check-${++n}` };
      const get = await exchange('GET', path, headers);
      const head = await exchange('HEAD', path, headers);
      const what = `${path} (${'authorization' in auth ? 'key' : 'no key'})`;
      assert.equal(head.status, get.status, `${what}: HEAD ${head.status}, GET ${get.status}`);
      assert.deepEqual(comparable(head.headers), comparable(get.headers), `${what}: the same header fields`);
      assert.equal(head.body.length, 0, `${what}: no content after HEAD's header block`);
      if ('authorization' in auth) seen.set(path, get.status);
    }
  }
  // Real answers were compared, not only errors: with the key, the pages, assets, documents,
  // files and API resources answer 200 (/ redirects, /mcp takes POST only).
  const expected = (p: string) => (p === '/' ? 302 : p === '/mcp' ? 405 : p === '/no-such-page' ? 404 : 200);
  for (const p of ['/no-such-page', '/', '/healthz', '/readyz', '/console/', '/docs', '/api/v1/openapi.json', '/files/seed/logo.png', '/mcp']) {
    assert.equal(seen.get(p), expected(p), `GET ${p}`);
  }
  // GET /session is a console session's own: a key gets 404 by design (test/auth.sso.test.ts).
  const failing = gets.filter((p) => !(seen.get(p)! < 400) && !(p === '/api/v1/session' && seen.get(p) === 404)).map((p) => `${p}: ${seen.get(p)}`);
  assert.deepEqual(failing, [], 'every GET route answers 2xx or a redirect for the resources made above');
  // A console asset was found on the page and compared.
  assert.ok([...seen].some(([p, s]) => p.startsWith('/console/assets/') && s === 200), 'a console asset was compared');
});

test('HEAD sends content-length where GET does, and the same value', async () => {
  const headers = { authorization: `Bearer ${key}` };
  let counted = 0;
  for (const path of ['/api/v1/openapi.json', '/api/v1/models', '/files/seed/logo.png', '/console/icon.svg']) {
    const get = await fetch(srv.origin + path, { headers });
    const body = Buffer.from(await get.arrayBuffer());
    const head = await exchange('HEAD', path, headers);
    const length = new Map(head.headers).get('content-length');
    const sent = get.headers.get('content-length');
    assert.equal(length, sent ?? undefined, `${path}: HEAD's content-length is GET's`);
    if (sent) assert.equal(Number(sent), body.length, `${path}: and it counts GET's content`);
    if (sent) counted++;
  }
  assert.ok(counted >= 3, 'the JSON documents and the file carry a content-length');
});

test('a method other than GET and HEAD on a GET route: 405 whose Allow names HEAD too', async () => {
  const res = await api(srv.base, key, '/models', { method: 'DELETE' });
  assert.equal(res.status, 405);
  assert.equal(res.headers.get('allow'), 'GET, HEAD');
  const post = await api(srv.base, key, `/generations/${ids.generations}/cancel`, { method: 'GET' });
  assert.equal(post.status, 405);
  assert.equal(post.headers.get('allow'), 'POST', 'a POST-only path does not offer HEAD');
});
