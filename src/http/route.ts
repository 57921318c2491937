// Route definitions: one file per route under src/http/routes/, each describing itself once for the
// router, the OpenAPI document (valibot schemas are the single source) and the authorization
// the server applies before its handler (auth/access.ts): scope, rate bucket and the read or
// write done in the same SQL call.

import type { H3Event } from 'h3';
import type * as v from 'valibot';
import type { Access, Authorized, Bucket, Scope } from '../auth/access.ts';
import type { Context } from '../context.ts';
import { errors } from '../errors.ts';

export type Schema = v.GenericSchema;

/** Where the REST routes are mounted. */
export const API_PREFIX = '/api/v1';

/** The absolute URL of an API path, e.g. a Location header: `apiUrl(ctx, '/generations/' + id)`. */
export function apiUrl(ctx: Context, path: string): string {
  return `${ctx.config.publicUrl}${API_PREFIX}${path}`;
}

interface RouteBase {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** OpenAPI-style path under /api/v1, e.g. `/generations/{id}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  params?: Record<string, Schema>;
  query?: Record<string, Schema>;
  /** Request headers the route reads (`Prefer`, `Last-Event-ID`), documented as header parameters. */
  headers?: Record<string, Schema>;
  body?: Schema;
  /**
   * Media types of the body (default application/json). For a line-delimited type
   * (application/jsonl), `body` is the schema of one line, as a stream's items are.
   */
  bodyTypes?: readonly string[];
  /** The body may be left out (`requestBody.required: false`); by default a route with a body requires it. */
  bodyOptional?: boolean;
  success: Success;
  /** Other success responses (e.g. 200 when a `Prefer: wait` POST settles in time). */
  also?: Success[];
  errors: number[];
}

export interface Success {
  status: number;
  description: string;
  schema?: Schema;
  /** Media type of the body (default application/json); `text/event-stream` for event streams. */
  type?: string;
  /**
   * For a stream (`text/event-stream`): one event, its `data` parsed as JSON — a registered
   * component. The document gives it as the media type's schema, the convention generators read
   * (docs/api.md, "Event streams in the OpenAPI document").
   */
  items?: Schema;
  headers?: Record<string, string>;
}

/** A route that needs an API key: the server authorizes it before the handler runs. */
export interface KeyRoute<P, X> extends RouteBase, Omit<Access<P, X>, 'scope' | 'bucket'> {
  scope: Scope;
  bucket: Bucket;
  handler(ctx: Context, event: H3Event, auth: Authorized<P, X>): Promise<unknown>;
}

/** A public route (the OpenAPI document). */
export interface PublicRoute extends RouteBase {
  scope: null;
  handler(ctx: Context, event: H3Event): Promise<unknown>;
}

/** A route as the router holds it (its payload and call types erased). */
export type RouteDef = KeyRoute<unknown, unknown> | PublicRoute;

export function defineRoute<P = never, X = object>(def: KeyRoute<P, X> | PublicRoute): RouteDef {
  return def as RouteDef;
}

/** A query parameter given at most once (400 when repeated), or undefined. */
export function queryParam(event: H3Event, name: string): string | undefined {
  const all = event.url.searchParams.getAll(name);
  if (all.length > 1) throw errors.invalid(`${name}: must be given once`);
  return all[0];
}
