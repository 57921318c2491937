// The MCP endpoint as one web-standard handler (Request → Response): Origin, protocol-version, method and
// bearer-auth gates in front of SDK v2's createMcpHandler, which serves 2026-07-28 and 2025-era traffic statelessly.
import { randomUUID } from 'node:crypto';
import { createMcpHandler, UnsupportedProtocolVersionError } from '@modelcontextprotocol/server';
import { production } from '../config.ts';
import { AuthError, authErrorResponse, type Identity } from './auth.ts';
import { createToolServerFactory, type Principal, type ToolDef } from './tool-server.ts';
import type { Span } from '@opentelemetry/api';

export type { Identity } from './auth.ts';
export type { ToolContext, ToolDef, ToolError } from './tool-server.ts';

/** Revisions served: the 2026-07-28 per-request revision plus the 2025 Streamable HTTP revisions (first is offered). */
export const MODERN_PROTOCOL_VERSIONS = ['2026-07-28'];
export const LEGACY_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'];
export const SUPPORTED_PROTOCOL_VERSIONS = [...MODERN_PROTOCOL_VERSIONS, ...LEGACY_PROTOCOL_VERSIONS];

export interface McpRouteOptions {
  tools: ToolDef[];
  /** Public URL of the endpoint (MCP_URL); also the token audience and the RFC 9728 resource. */
  mcpUrl: string;
  /** Exact origins (scheme://host[:port]) browsers may call from; default: the MCP URL's own origin. */
  allowedOrigins?: string[];
  /** Verifies the request's bearer token (see auth.ts createTokenVerifier().authenticate); throws AuthError. */
  authenticate?: (req: Request) => Promise<Identity>;
  /** Maps an identity to a Kiln account id, or null when not linked. Called only for tools/call. */
  resolveAccount(identity: Identity): Promise<string | null>;
  /** TEST ONLY: skip authentication and act as this identity (used by the conformance suite). */
  testOnlyDisableAuth?: Identity;
  serverInfo?: { name: string; version: string };
  instructions?: string;
  /** Largest POST body in bytes (413 above it); default the SDK's 4 MiB. Kiln passes KILN_MAX_BODY_BYTES like REST. */
  maxRequestBodySize?: number;
  /** Per-request correlation id; default a random UUID. */
  requestId?: (req: Request) => string;
  /** The request's server span (telemetry/http.ts), the parent of its tool calls' spans. */
  span?: (req: Request) => Span | undefined;
  /** Tool crashes and bad tool results (log as errors) plus requests the SDK rejected with a 4xx (info/debug). */
  onError?: (err: unknown, info: { requestId?: string; tool?: string }) => void;
}

const CORS_ALLOW_HEADERS = 'authorization, content-type, accept, mcp-protocol-version, mcp-method, mcp-name, last-event-id';
const CORS_EXPOSE_HEADERS = 'www-authenticate, mcp-protocol-version, mcp-session-id';

function jsonRpcError(status: number, code: number, message: string, data?: unknown, headers: Record<string, string> = {}): Response {
  return Response.json({ jsonrpc: '2.0', error: { code, message, ...(data !== undefined && { data }) }, id: null }, { status, headers });
}

function normalizeOrigin(value: string): string | undefined {
  try {
    const u = new URL(value);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : undefined;
  } catch {
    return undefined;
  }
}

/** Copies a response adding headers (SDK responses may have immutable headers). */
function withHeaders(res: Response, headers: Record<string, string>): Response {
  if (Object.keys(headers).length === 0) return res;
  const h = new Headers(res.headers);
  for (const [k, v] of Object.entries(headers)) h.set(k, v);
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers: h });
}

export function createMcpRoute(opts: McpRouteOptions): (req: Request) => Promise<Response> {
  if (!opts.authenticate && !opts.testOnlyDisableAuth) throw new Error('createMcpRoute: authenticate is required');
  if (opts.testOnlyDisableAuth && production()) throw new Error('createMcpRoute: testOnlyDisableAuth is refused when NODE_ENV=production');
  const mcpUrl = opts.mcpUrl;
  const allowed = new Set(
    (opts.allowedOrigins ?? [new URL(mcpUrl).origin]).map((o) => {
      const n = normalizeOrigin(o);
      if (!n) throw new Error(`invalid allowed origin: ${o}`);
      return n;
    }),
  );
  const report = (err: unknown, info: { requestId?: string; tool?: string }) => {
    try {
      opts.onError?.(err, info);
    } catch {
      /* reporting must never break a response */
    }
  };
  const buildServer = createToolServerFactory(opts.tools, {
    serverInfo: opts.serverInfo ?? { name: 'kiln', version: '0.1.0' },
    instructions: opts.instructions,
    supportedProtocolVersions: SUPPORTED_PROTOCOL_VERSIONS,
    onError: report,
  });
  const sdk = createMcpHandler(
    ({ authInfo }) => {
      const principal = authInfo?.extra?.principal as Principal | undefined;
      if (!principal) throw new Error('MCP request reached the SDK without a principal');
      return buildServer(principal);
    },
    { legacy: 'stateless', onerror: (err) => report(err, {}), ...(opts.maxRequestBodySize !== undefined && { maxRequestBodySize: opts.maxRequestBodySize }) },
  );

  return async function mcpRoute(req: Request): Promise<Response> {
    // 1. Origin (browsers only send it; absent means a non-browser client).
    const originHeader = req.headers.get('origin');
    let cors: Record<string, string> = {};
    if (originHeader !== null) {
      const origin = normalizeOrigin(originHeader);
      if (!origin || !allowed.has(origin)) return jsonRpcError(403, -32000, 'Forbidden: Origin not allowed');
      cors = { 'access-control-allow-origin': origin, 'access-control-expose-headers': CORS_EXPOSE_HEADERS, vary: 'Origin' };
    }
    const method = req.method.toUpperCase();
    if (method === 'OPTIONS') {
      return new Response(null, {
        status: 204,
        headers: {
          ...cors,
          allow: 'POST, OPTIONS',
          'access-control-allow-methods': 'POST, OPTIONS',
          'access-control-allow-headers': CORS_ALLOW_HEADERS,
          'access-control-max-age': '600',
        },
      });
    }
    // 2. Protocol version header, when present, must name a served revision.
    const version = req.headers.get('mcp-protocol-version')?.trim();
    if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      const err = new UnsupportedProtocolVersionError({ supported: SUPPORTED_PROTOCOL_VERSIONS, requested: version });
      return jsonRpcError(400, err.code, err.message, err.data, cors);
    }
    // 3. Stateless on every revision: no GET stream, no DELETE session.
    if (method !== 'POST') return jsonRpcError(405, -32000, 'Method not allowed.', undefined, { ...cors, allow: 'POST, OPTIONS' });

    // 4. Authentication on every request.
    const requestId = opts.requestId?.(req) ?? randomUUID();
    let identity: Identity;
    if (opts.testOnlyDisableAuth) {
      identity = opts.testOnlyDisableAuth;
    } else {
      try {
        identity = await opts.authenticate!(req);
      } catch (err) {
        if (err instanceof AuthError) return authErrorResponse(mcpUrl, err, cors);
        report(err, { requestId });
        return authErrorResponse(mcpUrl, new AuthError('unavailable', 'authentication is temporarily unavailable'), cors);
      }
    }
    let account: Promise<string | null> | undefined;
    const principal: Principal = {
      identity,
      requestId,
      span: opts.span?.(req),
      signal: req.signal,
      resolveAccount: () => (account ??= opts.resolveAccount(identity)),
    };

    // 5. The protocol (both eras; the SDK answers 400/406/415 ladder errors itself).
    const res = await sdk.fetch(req, { authInfo: { token: '', clientId: identity.sub, scopes: [], extra: { principal } } });
    return withHeaders(res, cors);
  };
}
