// Route definitions: one file per route under src/routes/, each describing itself once for
// the router and for the OpenAPI document (valibot schemas are the single source).

import type { H3Event } from 'h3';
import type * as v from 'valibot';
import type { Context } from './context.ts';

export type Schema = v.GenericSchema;

export interface RouteDef {
  method: 'GET' | 'POST';
  /** OpenAPI-style path under /api/v1, e.g. `/generations/{id}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  /** Scope the key needs; null for public documents. */
  scope: 'read' | 'write' | null;
  params?: Record<string, Schema>;
  query?: Record<string, Schema>;
  body?: Schema;
  success: { status: number; description: string; schema?: Schema; headers?: Record<string, string> };
  errors: number[];
  handler(ctx: Context, event: H3Event): Promise<Response | unknown>;
}

export function defineRoute(def: RouteDef): RouteDef {
  return def;
}
