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

/** valibot's own wording ("Invalid key: Expected "name" but received undefined"), as opposed to a schema's message. */
const DEFAULT_MESSAGE = /^Invalid [^:]+: (?:Expected [\s\S]* but r|R)eceived /;

/** `("a" | "b")` → `"a", "b"`: valibot's expected alternatives, as a list. */
function alternatives(expected: string | null): string {
  return (expected ?? '').replace(/^\((.*)\)$/s, '$1').split(' | ').join(', ');
}

const OBJECTS = new Set(['object', 'loose_object', 'strict_object', 'object_with_rest']);

const TYPE_NAMES: Record<string, string> = {
  string: 'a string', number: 'a number', boolean: 'true or false', bigint: 'an integer', Object: 'an object',
  Array: 'an array', null: 'null', Date: 'a date', Blob: 'a file', File: 'a file',
};

/**
 * The message of one issue in the API's wording ("is required", "must be a string"): a schema's
 * own message as it is, and valibot's defaults (which name the library's types and the received
 * value) reworded from the issue's type and requirement.
 */
function plainMessage(issue: v.BaseIssue<unknown>): string {
  // A missing key: an object schema's own message is about the object, not the key.
  if (OBJECTS.has(issue.type) && issue.kind === 'schema' && issue.input === undefined && issue.expected !== 'Object' && issue.expected !== 'never') return 'is required';
  if (!DEFAULT_MESSAGE.test(issue.message)) return issue.message;
  const req = (issue as { requirement?: unknown }).requirement;
  const unit = Array.isArray(issue.input) ? 'items' : 'characters';
  switch (issue.type) {
    case 'object': case 'loose_object': case 'strict_object': case 'object_with_rest':
      return issue.expected === 'never' ? 'is not a known field' : 'must be an object';
    case 'picklist': case 'enum': case 'variant': case 'union':
      return `must be one of ${alternatives(issue.expected)}`;
    case 'literal':
      return `must be ${issue.expected}`;
    case 'min_length': return `must be at least ${String(req)} ${unit}`;
    case 'max_length': return `must be at most ${String(req)} ${unit}`;
    case 'length': return `must be exactly ${String(req)} ${unit}`;
    case 'non_empty': return 'must not be empty';
    case 'min_value': case 'gt_value': return `must be ${issue.type === 'gt_value' ? 'more than' : 'at least'} ${String(req)}`;
    case 'max_value': case 'lt_value': return `must be ${issue.type === 'lt_value' ? 'less than' : 'at most'} ${String(req)}`;
    case 'integer': case 'safe_integer': return 'must be a whole number';
    case 'uuid': return 'must be a uuid';
    case 'iso_date': return 'must be a date as YYYY-MM-DD';
    case 'iso_timestamp': case 'iso_date_time': return 'must be an ISO 8601 timestamp';
    case 'url': return 'must be a URL';
    case 'email': case 'rfc_email': return 'must be an email address';
    case 'regex': return 'is not in the expected format';
  }
  if (issue.kind === 'schema') {
    const name = TYPE_NAMES[issue.expected ?? ''];
    return name ? `must be ${name}` : `must be ${alternatives(issue.expected)}`;
  }
  return 'is not valid';
}

/** Formats the first valibot issue as "field: message", in the API's wording (REST, MCP and the CLI alike). */
export function issueMessage(issues: readonly v.BaseIssue<unknown>[]): string {
  const issue = issues[0]!;
  const path = v.getDotPath(issue);
  const message = plainMessage(issue);
  return path ? `${path}: ${message}` : message;
}

export function parseWith<S extends v.GenericSchema>(schema: S, input: unknown): v.InferOutput<S> {
  const res = v.safeParse(schema, input);
  if (!res.success) throw errors.invalid(issueMessage(res.issues));
  return res.output;
}
