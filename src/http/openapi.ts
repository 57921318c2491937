// Builds the OpenAPI 3.1 document from the route definitions and their valibot schemas. An event
// stream's schema is the schema of its items, one event each (docs/api.md, "Event streams in the
// OpenAPI document").

import { toJsonSchema } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import { API_PREFIX, type RouteDef, type Success } from './route.ts';
import { components } from '../schemas.ts';

const STATUS_TEXT: Record<number, string> = {
  400: 'Invalid request.',
  401: 'Missing, malformed, revoked or unknown API key.',
  402: 'The key bills to a workspace that cannot be charged.',
  403: 'The key lacks the scope this endpoint needs.',
  404: 'Not found, or not owned by the caller.',
  409: 'Conflict: the resource is not in a state that allows this (`conflict`), e.g. the job already ended.',
  412: 'Precondition failed: `If-Match` names another version (`precondition_failed`).',
  413: 'The request body is larger than the server accepts (`invalid_request`).',
  415: 'The request body is not `application/json` (`invalid_request`).',
  422: 'The `Idempotency-Key` was already used with a different request (`idempotency_conflict`).',
  429: 'Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`).',
  500: 'Unexpected error.',
  503: 'A dependency (such as the rate limiter) is briefly unavailable; retry with backoff.',
};

/** What each tag groups, for readers of the reference (a route with a tag not listed here fails the build). */
const TAGS: Record<string, string> = {
  Generations: 'Image and code generation jobs: start one, then poll, wait for, stream, list or cancel it.',
  Batches: 'Bulk work: a JSON Lines file of generation requests (OpenAI\'s batch input format) run as one batch you can watch, cancel and download; its lines wait behind interactive work and take turns with other accounts\' batches.',
  Images: 'Synchronous transforms of stored images (convert, compress, trim); never billed.',
  Models: 'The model catalog, with the marked-up prices callers are billed.',
  Usage: 'The budget of the key\'s billing scope, its usage this period, and usage by day.',
  Workflows: 'Saved workflows — create, read, replace (optimistic, with `If-Match`), delete — and their server-side runs: start, poll, stream, cancel, retry, and the run\'s graph.',
  Webhooks: 'Endpoints that receive the scope\'s events, signed the Standard Webhooks way, and their delivery log.',
  Keys: 'API keys a billing scope manages itself (create, rotate with a grace period, revoke, cap with a budget), and its audit log. Needs the `keys` scope.',
  'End users': 'Your own users, as requests name them (`endUser`): a budget per UTC day or calendar month and an rpm for each, and what each used this period.',
  Account: 'Who the request\'s credential is (`GET /me`): its account, scopes, workspace and admin flag, for an API key and a console session alike.',
  Session: 'The console session of a browser signed in with SSO (`/auth/login`): who it is, and the workspace it acts in. API keys have none.',
  admin: 'The operator\'s view, for admins only (an admin\'s console session, or an admin\'s key with the `admin` scope; anyone else gets 403): accounts by spend this period, an account\'s tier, budget and keys, workspaces and members, the whole catalog with upstream cost, and the service\'s health. Every change is in the audit log under the admin\'s name.',
  Events: 'Every event of the key\'s billing scope as one resumable server-sent event stream.',
  Meta: 'This document.',
};

/**
 * The document's own reference page, as the contact for its readers: its URL when the server URL
 * is absolute (as served: the public URL + /api/v1), else the name alone.
 */
function contactOf(serverUrl: string) {
  try {
    return { name: 'Kiln API reference', url: new URL('/docs', serverUrl).href };
  } catch {
    return { name: 'Kiln API reference' };
  }
}

export function buildOpenApi(routes: RouteDef[], serverUrl = API_PREFIX) {
  const byIdentity = new Map<v.GenericSchema, string>();
  for (const [name, schema] of Object.entries(components)) byIdentity.set(schema, name);
  const convert = (schema: v.GenericSchema) => {
    const name = byIdentity.get(schema);
    if (name) return { $ref: `#/components/schemas/${name}` };
    return strip(toJsonSchema(schema, opts(schema)));
  };
  const opts = (self?: v.GenericSchema) => ({
    target: 'draft-2020-12' as const,
    errorMode: 'ignore' as const,
    definitions: Object.fromEntries(Object.entries(components).filter(([, s]) => s !== self)),
    overrideRef: ({ referenceId }: { referenceId: string }) => `#/components/schemas/${referenceId}`,
  });

  const paths: Record<string, any> = {};
  for (const r of routes) {
    const parameters: any[] = [];
    for (const [name, s] of Object.entries(r.params ?? {})) {
      parameters.push({ name, in: 'path', required: true, schema: convert(s) });
    }
    for (const [name, s] of Object.entries(r.query ?? {})) {
      const schema = convert(s);
      // An object parameter is sent as `name[key]=value` pairs (GET /generations' metadata filter).
      const deep = schema.type === 'object' ? { style: 'deepObject', explode: true } : {};
      parameters.push({ name, in: 'query', required: false, ...deep, schema });
    }
    for (const [name, s] of Object.entries(r.headers ?? {})) {
      const schema = convert(s);
      parameters.push({ name, in: 'header', required: false, ...(schema.description ? { description: schema.description } : {}), schema });
    }
    // A stream is described by its items, as generators read a `text/event-stream` schema: one
    // event, a named component.
    const bodySchema = (ok: Success) => convert(ok.items ?? ok.schema!);
    const responses: Record<string, any> = {};
    for (const ok of [r.success, ...(r.also ?? [])]) {
      responses[ok.status] = {
        description: ok.description,
        headers: {
          'x-request-id': { $ref: '#/components/headers/RequestId' },
          ...Object.fromEntries(Object.entries(ok.headers ?? {}).map(([h, d]) => [h, { description: d, schema: { type: 'string' } }])),
        },
        ...(ok.schema ? { content: { [ok.type ?? 'application/json']: { schema: bodySchema(ok) } } } : {}),
      };
    }
    for (const status of r.errors) {
      responses[status] = {
        description: STATUS_TEXT[status] ?? 'Error.',
        headers: {
          'x-request-id': { $ref: '#/components/headers/RequestId' },
          ...(status === 429 || status === 503 ? { 'retry-after': { $ref: '#/components/headers/RetryAfter' } } : {}),
          ...(status === 401 ? { 'www-authenticate': { $ref: '#/components/headers/WwwAuthenticate' } } : {}),
        },
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
    const op: any = {
      operationId: r.operationId,
      summary: r.summary,
      ...(r.description ? { description: r.description } : {}),
      tags: [r.tag],
      ...(parameters.length ? { parameters } : {}),
      ...(r.body ? { requestBody: { required: !r.bodyOptional, content: Object.fromEntries((r.bodyTypes ?? ['application/json']).map((t) => [t, { schema: convert(r.body!) }])) } } : {}),
      responses,
      security: r.scope ? [{ apiKey: [] }] : [],
      ...(r.scope ? { 'x-kiln-scope': r.scope } : {}),
    };
    (paths[r.path] ??= {})[r.method.toLowerCase()] = op;
  }

  const schemas: Record<string, any> = {};
  for (const [name, schema] of Object.entries(components)) {
    schemas[name] = strip(toJsonSchema(schema, opts(schema)));
  }

  const tags = [...new Set(routes.map((r) => r.tag))].map((name) => {
    const description = TAGS[name];
    if (!description) throw new Error(`OpenAPI: tag ${name} has no description in http/openapi.ts`);
    return { name, description };
  });
  return {
    openapi: '3.1.0',
    info: {
      title: 'Kiln API',
      version: '1.0.0',
      description: 'Asynchronous image and code generation, synchronous image transforms, the model catalog and usage, and server-side workflow runs. Money is in integer microdollars (1,000,000 = 1 US dollar). ' +
        'Another method on a known path answers 405 (`invalid_request`) with an `Allow` header naming the methods it takes (`GET, HEAD` for a read).',
      contact: contactOf(serverUrl),
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: serverUrl }],
    tags,
    security: [{ apiKey: [] }],
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'An API key: `Authorization: Bearer kiln_live_…`.' },
      },
      headers: {
        RequestId: { description: 'Identifies the request in logs.', schema: { type: 'string' } },
        RetryAfter: { description: 'Whole seconds to wait before retrying.', schema: { type: 'integer' } },
        WwwAuthenticate: { description: '`Bearer`: the request needs a valid API key in `Authorization: Bearer …`.', schema: { type: 'string' } },
      },
      schemas,
    },
  };
}

/** Drops the per-schema `$schema` marker (OpenAPI 3.1 sets the dialect once). */
function strip(s: any) {
  if (s && typeof s === 'object') {
    delete s.$schema;
    delete s.$defs;
  }
  return s;
}
