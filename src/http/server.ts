// The h3 app: REST routes under /api/v1, request ids, the error envelope, 404/405 handling, and
// HEAD for every route that answers GET.

import { randomUUID } from 'node:crypto';
import { H3, HTTPError, type H3Event } from 'h3';
import { authorizeRequest } from '../auth/access.ts';
import type { Context } from '../context.ts';
import { ApiError, envelope, toApiError } from '../errors.ts';
import { json } from './json.ts';
import { errorFields } from '../log.ts';
import { mountHealth } from './health.ts';
import { mountSso } from './sso.ts';
import { buildOpenApi } from './openapi.ts';
import { API_PREFIX, type RouteDef } from './route.ts';
import { apiRoutes } from './routes/index.ts';
import { openApiRoute } from './routes/openapi/get.ts';
import { carryMarks, requestContext, requestEnded, requestIdOf, requestRejected, requestStarted, traceRequests } from '../telemetry/http.ts';

declare module 'h3' {
  /** What Kiln keeps on every request (h3 merges this into event.context's type). */
  interface H3EventContext {
    /** The caller's X-Request-ID when well-formed, else a new uuid; set before any handler runs. */
    requestId?: string;
  }
}

export interface AppOptions {
  routes?: RouteDef[];
  /** Extra mounts (files, MCP) added by other modules: called with the app before the 404 fallback. */
  extend?: Array<(app: H3, ctx: Context) => void>;
}

export function requestId(event: H3Event): string | undefined {
  return event.context.requestId;
}

export function createApp(ctx: Context, opts: AppOptions = {}): H3 {
  const routes = opts.routes ?? apiRoutes;
  const all: RouteDef[] = [...routes, openApiRoute(() => buildOpenApi(all, `${ctx.config.publicUrl}${API_PREFIX}`))];

  const app = new H3({
    // Expected 4xx are not worth a stack trace; renderError logs real failures itself.
    silent: true,
    onRequest(event) {
      event.context.requestId = requestIdOf(event.req);
      requestStarted(event);
    },
    onResponse(response, event) {
      const id = event.context.requestId;
      if (id && !response.headers.has('x-request-id')) {
        try {
          response.headers.set('x-request-id', id);
        } catch {
          /* immutable headers (never for our own responses) */
        }
      }
      requestEnded(ctx, event, response.status);
    },
    onError(error, event) {
      return renderError(ctx, error, event);
    },
  });

  for (const r of all) {
    const h3Path = API_PREFIX + r.path.replace(/\{(\w+)\}/g, ':$1');
    // The one authorization path: the route's access rule, applied before its handler.
    // Each handler is served with the request's Context (traced under its span when tracing is on).
    app.on(r.method, h3Path, r.scope === null
      ? async (event) => r.handler(requestContext(ctx, event.req), event)
      : async (event) => {
        const rctx = requestContext(ctx, event.req);
        return r.handler(rctx, event, await authorizeRequest(rctx, event, r));
      });
  }
  // Known paths with another method → 405 with Allow.
  const methods = new Map<string, string[]>();
  for (const r of all) {
    const p = API_PREFIX + r.path.replace(/\{(\w+)\}/g, ':$1');
    methods.set(p, [...(methods.get(p) ?? []), r.method]);
  }
  for (const [p, ms] of methods) {
    const allow = ms.includes('GET') ? [...ms, 'HEAD'] : ms;
    app.all(p, () => {
      throw new ApiError('method_not_allowed', `Method not allowed. Use ${allow.join(', ')}.`, { headers: { allow: allow.join(', ') } });
    });
  }
  mountHealth(app, ctx);
  mountSso(app, ctx);
  for (const extend of opts.extend ?? []) extend(app, ctx);
  app.all('/**', () => {
    throw new ApiError('not_found', 'No such endpoint.');
  });
  answerHeadAsGet(app);
  traceRequests(app);
  return app;
}

/**
 * HEAD is GET without the content (RFC 9110 §9.3.2), for every route of the app, the mounts, the
 * 404s and 405s included: a HEAD request is dispatched as a GET, so no route needs a HEAD handler
 * and none can answer it differently. (h3 falls back to GET only when no route matches the path
 * with HEAD, and the 405 and 404 catch-alls match every method.)
 *
 * The GET response is handed back whole, body included: the Node adapter writes its status and
 * headers, content-length computed exactly as for GET, and no content, as http.ServerResponse
 * ignores writes to a HEAD response and srvx cancels a stream body (an event stream ends at once).
 */
function answerHeadAsGet(app: H3): void {
  const dispatch = app.fetch;
  app.fetch = (req) => {
    if (req.method !== 'HEAD') return dispatch(req);
    const get = new Request(req.url, { method: 'GET', headers: req.headers, signal: req.signal });
    carryMarks(req, get);
    return dispatch(get);
  };
}

function renderError(ctx: Context, error: HTTPError, event: H3Event): Response {
  let api: ApiError;
  const cause = (error as any).cause;
  if (error instanceof ApiError) api = error;
  else if (cause instanceof ApiError) api = cause;
  else if (cause && (cause as any).code) api = toApiError(cause);
  else if (error instanceof HTTPError && error.status >= 400 && error.status < 500) {
    // h3's own client errors (malformed URL, …): keep the status, use our envelope.
    const status = error.status;
    api = new ApiError(status === 404 ? 'not_found' : 'invalid_request', status === 404 ? 'No such endpoint.' : 'Invalid request.', { status });
  } else api = toApiError(cause ?? error);

  requestRejected(api.type);
  if (api.status >= 500 && api.status !== 503) {
    requestContext(ctx, event.req).log.error('request failed', { requestId: requestId(event), path: event.url.pathname, ...errorFields(cause ?? error) });
  }
  return json(envelope(api), api.status, { ...api.headers, 'x-request-id': requestId(event) ?? randomUUID() });
}
