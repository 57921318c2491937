// GET /openapi.json: OpenAPI 3.1.0 from the valibot schemas, clean under `redocly lint`.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, test } from 'node:test';
import { promisify } from 'node:util';
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

test('redocly lint reports no errors', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-openapi-'));
  const file = path.join(dir, 'openapi.json');
  fs.writeFileSync(file, JSON.stringify(doc, null, 2));
  const bin = path.resolve(import.meta.dirname, '..', 'node_modules', '.bin', 'redocly');
  const run = promisify(execFile);
  let out = '';
  let failed = false;
  try {
    const r = await run(bin, ['lint', file, '--format=stylish'], { env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }, timeout: 120_000 });
    out = r.stdout + r.stderr;
  } catch (e: any) {
    failed = true;
    out = String(e.stdout) + String(e.stderr);
  }
  fs.rmSync(dir, { recursive: true, force: true });
  assert.ok(!failed, out);
  assert.doesNotMatch(out, /\berror\b.*\d+ errors?|[1-9]\d* errors?/i, out);
});
