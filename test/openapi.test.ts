// GET /openapi.json: OpenAPI 3.1.0 from the valibot schemas, with no error and no warning under
// spectral's `oas` ruleset and redocly's `recommended` one (the served document, as a client's
// linter reads it); event streams described by their items, which a generator types; an ETag to
// revalidate with.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, test } from 'node:test';
import { promisify } from 'node:util';
import spectralCore from '@stoplight/spectral-core';
import { oas } from '@stoplight/spectral-rulesets';
import ts from 'typescript';
import { renderClientSchema } from '../src/http/client-schema.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

let srv: TestServer;
let doc: any;
before(async () => {
  srv = await startServer();
  const res = await api(srv.base, null, '/openapi.json');
  assert.equal(res.status, 200);
  doc = res.body;
});

test('document basics: 3.1.0, API version 1.0.0, bearer security, error envelope', () => {
  assert.equal(doc.openapi, '3.1.0');
  assert.equal(doc.info.version, '1.0.0');
  assert.deepEqual(doc.components.securitySchemes.apiKey, { type: 'http', scheme: 'bearer', description: doc.components.securitySchemes.apiKey.description });
  assert.ok(doc.components.schemas.Error.properties.error);
  assert.ok(doc.paths['/models'].get);
  assert.ok(doc.paths['/usage'].get);
  assert.equal(doc.paths['/usage'].get.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/Usage');
  assert.equal(doc.paths['/models'].get.responses['401'].content['application/json'].schema.$ref, '#/components/schemas/Error');
});

/** Every finding of spectral's `oas` ruleset (its default rules, as `extends: spectral:oas`), any severity. */
async function spectral(document: unknown): Promise<string[]> {
  const linter = new spectralCore.Spectral();
  linter.setRuleset({ extends: [oas] } as any);
  const results = await linter.run(JSON.stringify(document, null, 2));
  return results.map((r) => `${r.code} at ${r.path.join('.')}: ${r.message}`);
}

/** Every finding of `redocly lint --extends=recommended`, errors and warnings alike, offline. */
async function redocly(document: unknown): Promise<string[]> {
  // Its own folder: no redocly.yaml is picked up from around it.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-openapi-'));
  const file = path.join(dir, 'openapi.json');
  fs.writeFileSync(file, JSON.stringify(document, null, 2));
  const bin = path.resolve(import.meta.dirname, '..', 'node_modules', '.bin', 'redocly');
  let out: string;
  try {
    const r = await promisify(execFile)(bin, ['lint', file, '--extends=recommended', '--format=json'], {
      cwd: dir,
      // No telemetry, no update check: the linter makes no request of its own.
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', REDOCLY_SUPPRESS_NOTIFICATIONS: 'true', DO_NOT_TRACK: '1' },
      timeout: 120_000,
    });
    out = r.stdout;
  } catch (e: any) {
    out = String(e.stdout); // exit 1 when it found errors: the report is on stdout all the same
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const report = JSON.parse(out.slice(out.indexOf('{')));
  return report.problems.map((p: any) => `${p.severity} ${p.ruleId} at ${p.location?.[0]?.pointer}: ${p.message}`);
}

test('spectral (oas) and redocly (recommended) find nothing in the served document', async () => {
  assert.deepEqual(await spectral(doc), []);
  assert.deepEqual(await redocly(doc), []);
});

test('the linters do report: a document missing what the issue named fails both', async () => {
  const worse = structuredClone(doc);
  delete worse.info.contact;
  delete worse.tags[0].description;
  delete worse.paths['/openapi.json'].get.responses['412'];
  const s = await spectral(worse);
  assert.ok(s.some((f) => f.startsWith('info-contact')), s.join('\n'));
  const r = await redocly(worse);
  assert.ok(r.some((f) => f.includes('tag-description')), r.join('\n'));
  assert.ok(r.some((f) => f.includes('operation-4xx-response')), r.join('\n'));
});

test('event streams: each is described by its items\' schema, and openapi-typescript types the responses with them', async () => {
  const streams: Record<string, string> = {};
  for (const [p, item] of Object.entries<any>(doc.paths)) {
    for (const op of Object.values<any>(item)) {
      const schema = op.responses?.['200']?.content?.['text/event-stream']?.schema;
      if (!schema) continue;
      // The item's schema itself, nothing beside it: generators read it as the type of each event.
      assert.deepEqual(Object.keys(schema), ['$ref'], `${p}: the stream's schema is its item's`);
      streams[`${op.operationId}`] = schema.$ref.replace('#/components/schemas/', '');
    }
  }
  assert.deepEqual(streams, {
    streamBatchEvents: 'BatchStreamItem',
    streamGenerationEvents: 'GenerationStreamItem',
    streamWorkflowRunEvents: 'WorkflowRunStreamItem',
    streamEvents: 'EventStreamItem',
  });

  // The generator's output for the served document, compiled with code that reads each stream's
  // events: right uses compile, wrong ones do not (so an item typed as string or unknown fails).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-stream-types-'));
  fs.writeFileSync(path.join(dir, 'schema.ts'), await renderClientSchema(doc));
  const probe = (name: string, body: string) => {
    fs.writeFileSync(path.join(dir, `${name}.ts`), `import type { components, paths } from './schema.ts';\ntype S = components['schemas'];\n` +
      `type Stream<P extends keyof paths> = paths[P] extends { get: { responses: { 200: { content: { 'text/event-stream': infer T } } } } } ? T : never;\n${body}\nexport {};\n`);
    const program = ts.createProgram([path.join(dir, `${name}.ts`)], {
      strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
      allowImportingTsExtensions: true, skipLibCheck: true, types: [],
    });
    return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  };
  try {
    const right = probe('right', `
      const g: S['GenerationStreamItem'] = { event: 'status', id: '3', data: { id: 'x', status: 'completed', result: null, error: null } };
      const e: S['EventStreamItem'] = { event: 'webhook.test', id: '7-12', data: { type: 'webhook.test', timestamp: '2026-01-01T00:00:00.000Z', data: {} } };
      function onRun(x: S['WorkflowRunStreamItem']): number | string {
        if (x.event === 'progress') return x.data.total - x.data.completed;
        if (x.event === 'output') return x.data.outputNodeId;
        if (x.event === 'delta' || x.event === 'output.progress') return x.data.promptNodeId + x.data.outputNodeId;
        if (x.event === 'status') return x.data.status;
        return x.event;
      }
      function onGeneration(x: S['GenerationStreamItem']): string | number {
        if (x.event === 'delta') return x.data.offset + x.data.text.length;
        if (x.event === 'preview') return x.data.url;
        if (x.event === 'progress') return x.data.percent ?? x.data.message ?? '';
        if (x.event === 'reset') return x.data.attempt;
        return x.data.status;
      }
      // A stream's response is typed as its items: an item assigns to the component with no cast.
      declare const gi: Stream<'/generations/{id}/events'>;
      declare const ri: Stream<'/workflows/{id}/runs/{runId}/events'>;
      declare const ei: Stream<'/events'>;
      const g2: S['GenerationStreamItem'] = gi;
      const r2: S['WorkflowRunStreamItem'] = ri;
      const e2: S['EventStreamItem'] = ei;
      const status: string = gi.event === 'status' ? gi.data.status : gi.event;
      void g; void e; void onRun; void onGeneration; void g2; void r2; void e2; void status;`);
    assert.deepEqual(right, []);
    for (const wrong of [
      `const g: S['GenerationStreamItem'] = { event: 'status', id: '3', data: 'a string' };`,
      `const g: S['GenerationStreamItem'] = { event: 'status', id: '4', data: { id: 'x', status: 'completed', result: null, error: null } };`,
      `const e: S['EventStreamItem'] = { event: 'no.such.type', id: '1-1', data: { type: 'webhook.test', timestamp: 't', data: null } };`,
      `function f(x: S['WorkflowRunStreamItem']) { if (x.event === 'progress') return x.data.outputNodeId; }`,
      `function f(x: S['GenerationStreamItem']) { if (x.event === 'delta') return x.data.status; }`,
      // The stream's item is no string, and each stream has its own items.
      `declare const gi: Stream<'/generations/{id}/events'>; const s: string = gi;`,
      `declare const ei: Stream<'/events'>; const g: S['GenerationStreamItem'] = ei;`,
    ]) {
      assert.notDeepEqual(probe('wrong', wrong), [], `a generated item type refuses: ${wrong}`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the document has a strong ETag: If-None-Match answers 304 without a body, a stale If-Match 412', async () => {
  const first = await fetch(`${srv.base}/openapi.json`);
  const etag = first.headers.get('etag');
  assert.match(etag ?? '', /^"[\w-]{22}"$/);
  await first.arrayBuffer();
  const again = await fetch(`${srv.base}/openapi.json`, { headers: { 'if-none-match': `"other", ${etag}` } });
  assert.equal(again.status, 304);
  assert.equal(again.headers.get('etag'), etag);
  assert.equal((await again.arrayBuffer()).byteLength, 0);
  assert.equal((await fetch(`${srv.base}/openapi.json`, { headers: { 'if-none-match': '"other"' } })).status, 200);
  assert.equal((await fetch(`${srv.base}/openapi.json`, { headers: { 'if-match': etag! } })).status, 200);
  const stale = await api(srv.base, null, '/openapi.json', { headers: { 'if-match': '"an-older-version"' } });
  assert.equal(stale.status, 412);
  assert.equal(stale.body.error.type, 'precondition_failed');
  assert.equal(stale.headers.get('etag'), etag);
});

/** The document's operation and response for a request as the server answered it (path matched against the templates). */
function documented(method: string, url: string, status: number) {
  const path = new URL(url, 'http://x').pathname.replace(/^\/api\/v1/, '');
  for (const [template, item] of Object.entries<any>(doc.paths)) {
    const re = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    if (!re.test(path) || !item[method.toLowerCase()]) continue;
    const op = item[method.toLowerCase()];
    return { op, response: op.responses[String(status)] };
  }
  return null;
}

// Sent by every HTTP server, or describing the body itself: not an API's to document.
const TRANSPORT = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive', 'transfer-encoding', 'vary']);

test('every header an answer carries is described on that response (Location, cache-control, www-authenticate), and 405\'s Allow in the document', async () => {
  const a = await createAccount(srv.db.sql);
  const admin = await createAccount(srv.db.sql, { email: `admin-${Date.now()}@ops.test` });
  await srv.db.sql`select kiln.set_account_admin(${admin.id}, true)`;
  const { key } = await createKey(srv.db.sql, a.id, { scopes: ['read', 'write', 'keys'] });
  const { key: adminKey } = await createKey(srv.db.sql, admin.id, { scopes: ['read', 'admin'] });
  const graph = { nodes: [{ id: 'p1', kind: 'prompt', output: 'code', prompt: 'hi', model: 'local/coder' }, { id: 'o1', kind: 'output' }], edges: [{ from: 'p1', to: 'o1' }] };
  const wf = await api(srv.base, key, '/workflows', { body: { name: 'headers', graph } });
  assert.equal(wf.status, 201, JSON.stringify(wf.body));
  const requests: Array<[string, string, unknown?, string?]> = [
    ['GET', '/models'], ['GET', '/usage'], ['GET', '/usage/daily'], ['GET', '/generations'],
    ['POST', '/generations', { type: 'code', model: 'local/coder', prompt: 'headers' }],
    ['GET', '/workflows'], ['GET', `/workflows/${wf.body.id}`],
    ['POST', `/workflows/${wf.body.id}/runs`], ['GET', `/workflows/${wf.body.id}/runs`],
    ['GET', '/webhooks'], ['GET', '/keys'], ['GET', '/audit?limit=5'],
    ['GET', '/admin/accounts?limit=2', undefined, adminKey], ['GET', '/admin/workspaces?limit=2', undefined, adminKey],
    ['GET', '/models', undefined, 'kiln_live_not-a-key'], ['GET', '/usage', undefined, ''],
    ['GET', `/generations/00000000-0000-0000-0000-000000000000`],
  ];
  const seen = new Set<string>();
  for (const [method, p, body, as] of requests) {
    const res = await api(srv.base, as === undefined ? key : as || null, p, { method, ...(body !== undefined ? { body } : {}) });
    const d = documented(method, p, res.status);
    assert.ok(d?.response, `${method} ${p} answered ${res.status}, which its operation does not list`);
    const described = new Set(Object.keys(d.response.headers ?? {}).map((h) => h.toLowerCase()));
    for (const [h] of res.headers) {
      if (TRANSPORT.has(h)) continue;
      assert.ok(described.has(h), `${method} ${p} ${res.status} sends ${h}, not described on that response`);
      seen.add(`${res.status} ${h}`);
    }
  }
  for (const must of ['202 location', '200 cache-control', '401 www-authenticate']) assert.ok(seen.has(must), `checked ${must}`);
  // The 401's www-authenticate is a named header; a 405 (another method on a known path) is in the document's description.
  assert.equal(doc.paths['/models'].get.responses['401'].headers['www-authenticate'].$ref, '#/components/headers/WwwAuthenticate');
  const wrong = await api(srv.base, key, '/models', { method: 'DELETE' });
  assert.equal(wrong.status, 405);
  assert.equal(wrong.headers.get('allow'), 'GET, HEAD');
  assert.match(doc.info.description, /405.*`Allow`/);
});

test('parameters and bodies as clients type them: integer limits, date ranges, 413/415 wherever a body is read, the optional rotate body, every event type of GET /events', async () => {
  const param = (p: string, name: string) => doc.paths[p].get.parameters.find((x: any) => x.name === name).schema;
  assert.deepEqual(param('/audit', 'limit'), { type: 'integer', minimum: 1, maximum: 100, description: param('/audit', 'limit').description });
  for (const p of ['/admin/accounts', '/admin/workspaces']) {
    assert.deepEqual(param(p, 'limit'), { type: 'integer', minimum: 1, maximum: 200, description: param(p, 'limit').description }, p);
  }
  for (const name of ['from', 'to']) assert.equal(param('/usage/daily', name).format, 'date', name);
  for (const [p, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      if (!op.requestBody) continue;
      for (const status of ['413', '415']) assert.ok(op.responses[status], `${method.toUpperCase()} ${p} reads a body: it lists ${status}`);
    }
  }
  assert.equal(doc.paths['/keys/{id}/rotate'].post.requestBody.required, false);
  assert.equal(doc.paths['/generations'].post.requestBody.required, true);
  const listed = [...doc.paths['/events'].get.description.matchAll(/`([a-z_]+\.[a-z_]+)`/g)].map((m) => m[1]);
  assert.deepEqual(listed, doc.components.schemas.EventStreamItem.properties.event.enum);
  assert.equal(listed.length, 11);

  // What the document says is what the server does: no body rotates with the default grace, and a
  // limit out of the documented range is refused.
  const a = await createAccount(srv.db.sql);
  const { key } = await createKey(srv.db.sql, a.id, { scopes: ['read', 'write', 'keys'] });
  const made = await api(srv.base, key, '/keys', { body: { name: 'rotate me', scopes: ['read'] } });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const res = await fetch(`${srv.base}/keys/${made.body.id}/rotate`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
  assert.equal(res.status, 201, await res.text());
  assert.equal((await api(srv.base, key, '/audit?limit=101')).status, 400);
  assert.equal((await api(srv.base, key, '/audit?limit=100')).status, 200);
  const day = await api(srv.base, key, '/usage/daily?from=2026-02-30');
  assert.equal(day.status, 400);
  assert.equal(day.body.error.message, 'from: must be a date as YYYY-MM-DD');
});
