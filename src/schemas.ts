// Shared valibot schemas (named OpenAPI components for the bodies every endpoint returns) and
// the one way a validation failure is worded: "field: message", a 400 invalid_request.
// Validation is the domain's, not HTTP's: services, MCP tools and the CLI parse with it, and
// http/openapi.ts only reads the registered components.

import * as v from 'valibot';
import { errors } from './errors.ts';

export const ErrorEnvelope = v.pipe(
  v.object({
    error: v.object({
      type: v.pipe(
        v.picklist(['invalid_request', 'unauthorized', 'insufficient_scope', 'forbidden', 'rate_limited', 'insufficient_quota', 'payment_required', 'not_found', 'gone', 'conflict', 'precondition_failed', 'idempotency_conflict', 'server_error']),
        v.description('Stable machine-readable error type.'),
      ),
      message: v.pipe(v.string(), v.description('Human-readable message.')),
      details: v.optional(v.pipe(
        v.array(v.object({
          path: v.pipe(v.string(), v.description('JSON pointer (RFC 6901) into the request body, e.g. `/graph/nodes/3/model`; `""` is the body itself.')),
          message: v.pipe(v.string(), v.description('What is wrong there, naming the node or edge.')),
        })),
        v.description('Every problem of a request body checked as a whole (workflow saves), in the order found; `message` names the first ones.'),
      )),
    }),
  }),
  v.description('Every error response uses this envelope.'),
);

export const Uuid = v.pipe(v.string(), v.uuid('must be a uuid'));

/** Whether `s` is a uuid as `Uuid` accepts it: path ids and job payloads are checked before any SQL. */
export function isUuid(s: unknown): s is string {
  return v.is(Uuid, s);
}

/** Named components for the OpenAPI document; routes add theirs with `registerSchemas`. */
export const components: Record<string, v.GenericSchema> = { Error: ErrorEnvelope };

export function registerSchemas(schemas: Record<string, v.GenericSchema>): void {
  Object.assign(components, schemas);
}

/** Formats the first valibot issue as "field: message". */
export function issueMessage(issues: readonly v.BaseIssue<unknown>[]): string {
  const issue = issues[0];
  const path = v.getDotPath(issue);
  return path ? `${path}: ${issue.message}` : issue.message;
}

export function parseWith<S extends v.GenericSchema>(schema: S, input: unknown): v.InferOutput<S> {
  const res = v.safeParse(schema, input);
  if (!res.success) throw errors.invalid(issueMessage(res.issues));
  return res.output;
}
