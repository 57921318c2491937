// What every HTTP request leaves behind: kiln_http_* metrics under its route template, one access
// log line, and (tracing on) a server span that continues the caller's W3C traceparent. The route
// is the template h3 matched (`/api/v1/generations/{id}`), `unmatched` for unknown paths: never
// the raw path.

import type { H3, H3Event } from 'h3';
import { createContextKey, SpanStatusCode, type Span } from '@opentelemetry/api';
import type { Context } from '../context.ts';
import { requestIdKey } from '../log.ts';
import { countRejection, observeHttp } from './metrics.ts';
import { context, contextFromHeaders, SpanKind, startSpan, trace, tracingOn } from './tracing.ts';

const started = new WeakMap<H3Event, number>();
const templates = new Map<string, string>();

/** The request id of the request being served, for log lines (set with tracing on: the context carries it). */
export const REQUEST_ID = createContextKey('kiln.request_id');
requestIdKey.key = REQUEST_ID;

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

export function requestStarted(event: H3Event, requestId: string): void {
  started.set(event, performance.now());
  if (tracingOn()) {
    const holder = context.active().getValue(REQUEST_ID) as { id?: string } | undefined;
    if (holder) holder.id = requestId;
  }
}

export function requestEnded(ctx: Context, event: H3Event, status: number): void {
  const t0 = started.get(event);
  const seconds = t0 === undefined ? 0 : (performance.now() - t0) / 1000;
  const route = routeTemplate(event);
  const method = event.req.method;
  observeHttp(method, route, status, seconds);
  if (tracingOn()) {
    const span = trace.getActiveSpan();
    if (span) {
      if (route !== 'unmatched') {
        span.setAttribute('http.route', route);
        span.updateName(`${method} ${route}`);
      }
    }
  }
  ctx.log.info('request', { method, route, status, duration_ms: Math.round(seconds * 1e4) / 10, request_id: event.context.requestId });
}

/** An API error answered: a rejection when its code is one kiln_rejections_total counts. */
export function requestRejected(code: string): void {
  countRejection(code);
}

/**
 * With tracing on, wraps the app's fetch in a server span: the incoming traceparent is its parent,
 * and the span (with the request id) is the active context while the request is handled.
 */
export function traceRequests(app: H3): void {
  if (!tracingOn()) return;
  const dispatch = app.fetch;
  app.fetch = (req: Request) => {
    const parent = contextFromHeaders(req.headers);
    const span = startSpan(req.method, { kind: SpanKind.SERVER, parent }) as Span;
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
    const active = trace.setSpan(parent, span).setValue(REQUEST_ID, {});
    return context.with(active, async () => {
      try {
        const res = await dispatch(req);
        span.setAttribute('http.response.status_code', res.status);
        if (res.status >= 500) {
          span.setAttribute('error.type', String(res.status));
          span.setStatus({ code: SpanStatusCode.ERROR, message: String(res.status) });
        }
        return res;
      } catch (e) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: 'exception' });
        throw e;
      } finally {
        span.end();
      }
    });
  };
}
