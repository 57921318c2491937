// The client's committed types (src/client/schema.ts) are what openapi-typescript renders from the
// document the server serves: any change to a route that is not regenerated fails here.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { CLIENT_SCHEMA_FILE, currentDocument, renderClientSchema } from '../src/http/client-schema.ts';
import { api, startServer } from './_setup.ts';

test('src/client/schema.ts is what the served OpenAPI document renders (`npm run client:schema` regenerates it)', async () => {
  const srv = await startServer();
  const res = await api(srv.base, null, '/openapi.json');
  assert.equal(res.status, 200);
  const rendered = await renderClientSchema(res.body);
  const committed = fs.readFileSync(CLIENT_SCHEMA_FILE, 'utf8');
  assert.ok(rendered === committed, 'src/client/schema.ts is stale: run `npm run client:schema` and commit the result');
  // The script's in-process document is the served one, so the script regenerates exactly this.
  assert.equal(await renderClientSchema(currentDocument()), rendered);
});

test('a changed document renders differently (the comparison can fail)', async () => {
  const doc = currentDocument() as any;
  doc.components.schemas.Usage.properties.extra_field = { type: 'string' };
  assert.notEqual(await renderClientSchema(doc), fs.readFileSync(CLIENT_SCHEMA_FILE, 'utf8'));
});
