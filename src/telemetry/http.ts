// What every HTTP request leaves behind: kiln_http_* metrics under its route template, one access
// log line, and (tracing on) a server span that continues the caller's W3C traceparent. The route
// is the template h3 matched (`/api/v1/generations/{id}`), `unmatched` for unknown paths: never
// the raw path.

import { randomUUID } from 'node:crypto';
import type { H3, H3Event } from 'h3';
import { SpanStatusCode, type Span } from '@opentelemetry/api';
import type { Context } from '../context.ts';
import { countRejection, observeHttp } from './metrics.ts';
import { underSpan } from './scope.ts';
import { contextFromHeaders, SpanKind, startSpan, tracingOn } from './tracing.ts';

const templates = new Map<string, string>();

/** What the traced fetch leaves on a Request for its handlers: the server span, the request id, the request's Context. */
const SPAN = Symbol('kiln.server_span');
const ID = Symbol('kiln.request_id');
const CTX = Symbol('kiln.request_ctx');
type Marked = Request & { [SPAN]?: Span; [ID]?: string; [CTX]?: Context };

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

/** The caller's X-Request-ID when well-formed, else a new uuid: decided once per request. */
export function requestIdOf(req: Request): string {
  const r = req as Marked;
  let id = r[ID];
  if (id === undefined) {
    const incoming = req.headers.get('x-request-id');
    id = r[ID] = incoming && REQUEST_ID_RE.test(incoming) ? incoming : randomUUID();
  }
  return id;
}

/** A request's server span (tracing on), for what is served outside the routes (MCP). */
export function serverSpanOf(req: Request): Span | undefined {
  return (req as Marked)[SPAN];
}

/**
 * The Context a request is served with: with tracing on, the process's under the request's server
 * span (its queries traced under it, its log lines carrying the trace and request ids); else
 * `ctx` itself. Made once per request.
 */
export function requestContext(ctx: Context, req: Request): Context {
  const r = req as Marked;
  const span = r[SPAN];
  if (span === undefined) return ctx;
  return (r[CTX] ??= underSpan(ctx, span, requestIdOf(req)));
}

/** The request a HEAD is answered with (a GET) carries what the original was marked with. */
export function carryMarks(from: Request, to: Request): void {
  const a = from as Marked;
  const b = to as Marked;
  if (a[ID] !== undefined) b[ID] = a[ID];
  if (a[SPAN] !== undefined) b[SPAN] = a[SPAN];
}

/** h3's matched route as a template: `:id` → `{id}`; the catch-all and no match → `unmatched`. */
export function routeTemplate(event: H3Event): string {
  const route = (event.context as { matchedRoute?: { route?: string } }).matchedRoute?.route;
  if (!route || route === '/**') return 'unmatched';
  let t = templates.get(route);
  if (t === undefined) {
    t = route.replace(/:(\w+)/g, '{$1}');
    templates.set(route, t);
  }
  return t;
}

export function requestStarted(event: H3Event): void {
  (event.context as { t0?: number }).t0 = performance.now();
}

export function requestEnded(ctx: Context, event: H3Event, status: number): void {
  const t0 = (event.context as { t0?: number }).t0;
  const seconds = t0 === undefined ? 0 : (performance.now() - t0) / 1000;
  const route = routeTemplate(event);
  const method = event.req.method;
  observeHttp(method, route, status, seconds);
  const span = (event.req as Marked)[SPAN];
  if (span !== undefined && route !== 'unmatched' && span.isRecording()) {
    span.setAttribute('http.route', route);
    span.updateName(`${method} ${route}`);
  }
  if (ctx.log.enabled('info')) {
    requestContext(ctx, event.req).log.info('request', { method, route, status, duration_ms: Math.round(seconds * 1e4) / 10, request_id: event.context.requestId });
  }
}

/** An API error answered: a rejection when its code is one kiln_rejections_total counts. */
export function requestRejected(code: string): void {
  countRejection(code);
}

/**
 * With tracing on, wraps the app's fetch in a server span: the incoming traceparent is its parent,
 * and the span rides on the Request, where requestContext finds it.
 */
export function traceRequests(app: H3): void {
  if (!tracingOn()) return;
  const dispatch = app.fetch;
  app.fetch = (req: Request) => {
    const span = startSpan(req.method, { kind: SpanKind.SERVER, parent: contextFromHeaders(req.headers) })!;
    (req as Marked)[SPAN] = span;
    if (span.isRecording()) {
      // The path without parsing the whole URL (the request's URL is absolute: scheme://host/path?query).
      const url = req.url;
      const start = url.indexOf('/', url.indexOf('//') + 2);
      const q = url.indexOf('?', start);
      span.setAttributes({
        'http.request.method': req.method,
        'url.path': start < 0 ? '/' : url.slice(start, q < 0 ? undefined : q),
        'url.scheme': url.slice(0, url.indexOf(':')),
      });
    }
    return served(dispatch, req, span);
  };
}

async function served(dispatch: (req: Request) => Response | Promise<Response>, req: Request, span: Span): Promise<Response> {
  try {
    const res = await dispatch(req);
    if (span.isRecording()) {
      span.setAttribute('http.response.status_code', res.status);
      if (res.status >= 500) {
        span.setAttribute('error.type', String(res.status));
        span.setStatus({ code: SpanStatusCode.ERROR, message: String(res.status) });
      }
    }
    return res;
  } catch (e) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'exception' });
    throw e;
  } finally {
    span.end();
  }
}
