// Route definitions: one file per route under src/http/routes/, each describing itself once for the
// router, the OpenAPI document (valibot schemas are the single source) and the authorization
// the server applies before its handler (auth/access.ts): scope, rate bucket and the read or
// write done in the same SQL call.

import type { H3Event } from 'h3';
import type * as v from 'valibot';
import type { Access, Authorized, Bucket, Scope } from '../auth/access.ts';
import type { Context } from '../context.ts';

export type Schema = v.GenericSchema;

interface RouteBase {
  method: 'GET' | 'POST';
  /** OpenAPI-style path under /api/v1, e.g. `/generations/{id}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  params?: Record<string, Schema>;
  query?: Record<string, Schema>;
  /** Optional request headers the route reads (documented as header parameters). */
  headers?: Record<string, Schema>;
  body?: Schema;
  success: { status: number; description: string; schema?: Schema; headers?: Record<string, string> };
  errors: number[];
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
