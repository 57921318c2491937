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
import { api, startServer, type TestServer } from './_setup.ts';

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
        return x.data.status;
      }
      // A stream's response is typed as its items: an item assigns to the component with no cast.
      declare const gi: Stream<'/generations/{id}/events'>;
      declare const ri: Stream<'/workflows/{id}/runs/{runId}/events'>;
      declare const ei: Stream<'/events'>;
      const g2: S['GenerationStreamItem'] = gi;
      const r2: S['WorkflowRunStreamItem'] = ri;
      const e2: S['EventStreamItem'] = ei;
      const status: string = gi.data.status;
      void g; void e; void onRun; void g2; void r2; void e2; void status;`);
    assert.deepEqual(right, []);
    for (const wrong of [
      `const g: S['GenerationStreamItem'] = { event: 'status', id: '3', data: 'a string' };`,
      `const g: S['GenerationStreamItem'] = { event: 'status', id: '4', data: { id: 'x', status: 'completed', result: null, error: null } };`,
      `const e: S['EventStreamItem'] = { event: 'no.such.type', id: '1-1', data: { type: 'webhook.test', timestamp: 't', data: null } };`,
      `function f(x: S['WorkflowRunStreamItem']) { if (x.event === 'progress') return x.data.outputNodeId; }`,
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
