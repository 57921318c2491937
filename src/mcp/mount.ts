// Mounts the MCP endpoint (and its RFC 9728 metadata) in the h3 app when an identity provider is
// configured: OIDC_ISSUER, or the development issuer with KILN_DEV_ISSUER=1. Without one, /mcp is a 404.
import { randomUUID } from 'node:crypto';
import type { H3 } from 'h3';
import type { Config } from '../config.ts';
import type { Context } from '../context.ts';
import { errorFields } from '../log.ts';
import { requestId } from '../http/server.ts';
import { createTokenVerifier, metadataPaths, protectedResourceMetadataHandler, type Identity } from './auth.ts';
import { DEV_ISSUER_ENV, devIssuerUrl, startDevIssuer } from './dev-issuer.ts';
import { createMcpRoute } from './server.ts';
import { kilnTools, resolveIdentity } from './tools/index.ts';
import { serverSpanOf } from '../telemetry/http.ts';

/** MCP_URL, or `<public URL>/mcp`. It is also the audience every token must carry. */
export function mcpUrlOf(config: Config): string {
  return (config.mcpUrl ?? `${config.publicUrl}/mcp`).replace(/\/+$/, '');
}

export interface IssuerSettings {
  issuer: string;
  jwksUrl?: string;
  /** The development issuer (tokens from `kiln dev-token`). */
  dev: boolean;
}

/** Which identity provider the endpoint trusts; null when MCP is not configured. OIDC_ISSUER wins over the dev issuer. */
export function issuerOf(config: Config): IssuerSettings | null {
  if (config.oidcIssuer) return { issuer: config.oidcIssuer, jwksUrl: config.oidcJwksUrl, dev: false };
  if (config.devIssuer) {
    const issuer = devIssuerUrl(config.devIssuerPort);
    return { issuer, jwksUrl: `${issuer}/jwks.json`, dev: true };
  }
  return null;
}

/** Env handed to the dev-issuer module: config already decided (KILN_DEV_ISSUER accepts 1/true/yes/on). */
export const DEV_ENV = { [DEV_ISSUER_ENV]: '1' };

export interface MountOptions {
  /** TEST ONLY: skip token verification and act as this identity (the conformance suite has no tokens). */
  testOnlyDisableAuth?: Identity;
}

export function mountMcp(app: H3, ctx: Context, opts: MountOptions = {}): void {
  const { config, log } = ctx;
  const settings = issuerOf(config);
  if (!settings && !opts.testOnlyDisableAuth) return;
  const mcpUrl = mcpUrlOf(config);
  if (config.devIssuer && !settings?.dev) log.warn(`${DEV_ISSUER_ENV} is ignored: OIDC_ISSUER is set`);
  if (settings?.dev) {
    if (config.production) throw new Error(`${DEV_ISSUER_ENV} is a development-only switch and is refused when NODE_ENV=production`);
    startBundledDevIssuer(ctx);
  }

  const verifier = settings && !opts.testOnlyDisableAuth ? createTokenVerifier({
    issuer: settings.issuer, jwksUrl: settings.jwksUrl, audience: mcpUrl, jwksCacheMaxAgeMs: config.oidcJwksCacheSeconds * 1000,
  }) : undefined;
  const ids = new WeakMap<Request, string>();
  const mcp = createMcpRoute({
    tools: kilnTools(ctx),
    mcpUrl,
    allowedOrigins: config.mcpAllowedOrigins,
    authenticate: verifier?.authenticate,
    testOnlyDisableAuth: opts.testOnlyDisableAuth,
    resolveAccount: (identity) => resolveIdentity(ctx, identity),
    requestId: (req) => ids.get(req) ?? randomUUID(),
    span: serverSpanOf,
    // Image inputs may be data: URIs, as over REST.
    maxRequestBodySize: config.maxBodyBytes,
    instructions:
      'Kiln generates images and code and runs saved generation workflows. generate_image, generate_code and run_workflow start jobs and return ' +
      'pending ids at once: poll get_generation / get_workflow_run. They spend the same budget as the REST API (check get_usage); transform_image is free.',
    onError(err, info) {
      if (info.tool) log.error('mcp tool failed', { requestId: info.requestId, tool: info.tool, ...errorFields(err) });
      else log.debug('mcp request rejected', { requestId: info.requestId, ...errorFields(err) });
    },
  });
  const path = new URL(mcpUrl).pathname || '/';
  app.all(path, (event) => {
    const id = requestId(event);
    if (id) ids.set(event.req, id);
    return mcp(event.req);
  });
  if (settings) {
    const prm = protectedResourceMetadataHandler(mcpUrl, settings.issuer);
    for (const p of metadataPaths(mcpUrl)) app.all(p, (event) => prm(event.req));
  }
  log.debug('mcp endpoint mounted', { mcpUrl, issuer: settings?.issuer ?? null, authDisabled: !!opts.testOnlyDisableAuth });
}

/**
 * With KILN_DEV_ISSUER=1 and no OIDC_ISSUER, `kiln serve`/`kiln api` host the development issuer
 * themselves (loopback only, until shutdown). A busy port means one is already running (`kiln
 * dev-issuer` on the same data dir serves the same key), which is fine.
 */
function startBundledDevIssuer(ctx: Context): void {
  const { config, log } = ctx;
  startDevIssuer({ dataDir: config.dataDir, port: config.devIssuerPort, env: DEV_ENV }).then(
    (dev) => {
      log.warn('development OIDC issuer running: MCP accepts tokens from `kiln dev-token` (never use in production)', { issuer: dev.issuer });
      if (ctx.shutdown.aborted) void dev.close();
      else ctx.shutdown.addEventListener('abort', () => void dev.close(), { once: true });
    },
    (err) => {
      if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') log.info('development issuer port busy; assuming `kiln dev-issuer` is running', { port: config.devIssuerPort });
      else log.error('development issuer failed to start', errorFields(err));
    },
  );
}
