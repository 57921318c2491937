// Renders src/client/schema.ts — the typed client's types — from the OpenAPI document with
// openapi-typescript. `npm run client:schema` rewrites the file; test/client.schema.test.ts renders
// it from the served document and fails on any difference, so the client cannot drift from the API.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import { buildOpenApi } from './openapi.ts';
import type { RouteDef } from './route.ts';
import { apiRoutes } from './routes/index.ts';
import { openApiRoute } from './routes/openapi/get.ts';

export const CLIENT_SCHEMA_FILE = path.resolve(import.meta.dirname, '..', 'client', 'schema.ts');

const HEADER =
  '// Generated from the OpenAPI document by `npm run client:schema` (openapi-typescript). Do not edit:\n' +
  '// test/client.schema.test.ts fails when this file differs from what the served document renders.\n\n';

/** The document as the server builds it (the same route list as createApp's). */
export function currentDocument(): unknown {
  const all: RouteDef[] = [...apiRoutes, openApiRoute(() => buildOpenApi(all))];
  return buildOpenApi(all);
}

/** The TypeScript source of the client's types for an OpenAPI document. */
export async function renderClientSchema(doc: unknown): Promise<string> {
  // `servers` names the host that served the document; the types must not depend on it.
  const { servers: _servers, ...rest } = doc as Record<string, unknown>;
  const ast = await openapiTS(rest as any, { alphabetize: false });
  return HEADER + astToString(ast);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const source = await renderClientSchema(currentDocument());
  fs.writeFileSync(CLIENT_SCHEMA_FILE, source);
  process.stdout.write(`wrote ${path.relative(process.cwd(), CLIENT_SCHEMA_FILE)}\n`);
}
