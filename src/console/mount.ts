// Serves the browser console at /console (its assets built in memory by build.ts), redirects / to
// it, and renders the OpenAPI document at /docs with Redoc's standalone bundle, vendored in
// vendor/redoc/ (docs/console.md) — nothing is loaded from a CDN, every response carries a strict CSP.

import fs from 'node:fs';
import type { H3, H3Event } from 'h3';
import type { Context } from '../context.ts';
import { ApiError, errors } from '../errors.ts';
import { consoleBuild } from './build.ts';

/** Headers every console and docs response carries (CSP added per page). */
const BASE_HEADERS: Record<string, string> = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=()',
};

/**
 * The console's policy: scripts and styles only from this origin (no inline script, no eval),
 * requests only to this origin. Images also from the public URL's origin, which signs result URLs
 * and can differ from the one the browser used (a proxy).
 */
export function consoleCsp(publicUrl: string): string {
  let img = "'self' data: blob:";
  try {
    img += ` ${new URL(publicUrl).origin}`;
  } catch {
    /* config already validated it */
  }
  return [
    "default-src 'none'", "script-src 'self'", "style-src 'self'", `img-src ${img}`, "connect-src 'self'",
    "font-src 'self'", "manifest-src 'self'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * /docs: Redoc injects its styles as <style> elements, so styles may be inline; scripts may not.
 * Its search runs in a worker built from a blob.
 */
export const DOCS_CSP = [
  "default-src 'none'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:",
  "font-src 'self' data:", "connect-src 'self'", "worker-src 'self' blob:", "base-uri 'none'",
  "form-action 'none'", "frame-ancestors 'none'",
].join('; ');

const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="8" fill="#c2410c"/><path d="M9 24V8h3.4v6.6L18.3 8h4.1l-6.2 6.9L22.8 24h-4.2l-4.7-6.6-1.5 1.6V24z" fill="#fff"/></svg>`;

const REDOCLY_LOGO = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 84 18"><text x="0" y="14" font-family="system-ui, sans-serif" font-size="14" font-weight="700" fill="#0044d4">Redocly</text></svg>`;

function page(body: string, type: string, headers: Record<string, string>, status = 200): Response {
  return new Response(body, { status, headers: { 'content-type': type, ...BASE_HEADERS, ...headers } });
}

async function consolePage(ctx: Context): Promise<Response> {
  const { script, style } = await consoleBuild();
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">${ctx.config.oidc ? '\n<meta name="kiln-sso" content="/auth/login">' : ''}
<title>Kiln console</title>
<link rel="icon" href="/console/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/console/assets/${style.name}">
<script type="module" src="/console/assets/${script.name}"></script>
</head>
<body>
<div id="app"><main class="boot"><p>Loading the Kiln console…</p></main></div>
<noscript><p class="boot">The Kiln console needs JavaScript. The API itself is documented at <a href="/docs">/docs</a>.</p></noscript>
</body>
</html>
`;
  // no-cache: the page names the current hashed assets, which a new build replaces.
  return page(html, 'text/html; charset=utf-8', { 'content-security-policy': consoleCsp(ctx.config.publicUrl), 'cache-control': 'no-cache' });
}

async function consoleAsset(event: H3Event): Promise<Response> {
  const name = event.url.pathname.slice('/console/assets/'.length);
  const asset = (await consoleBuild()).assets.get(name);
  if (!asset) throw errors.notFound('Asset');
  return new Response(asset.body as unknown as BodyInit, {
    headers: { 'content-type': asset.type, 'cache-control': 'public, max-age=31536000, immutable', ...BASE_HEADERS },
  });
}

/**
 * Redoc's standalone bundle (MIT, Redocly LLC): `bundles/redoc.standalone.js` of the `redoc`
 * package, the file Redoc publishes for self-hosting, vendored byte for byte in vendor/redoc/ with
 * its licenses (vendor/redoc/update fetches it; source.json names its version and hashes).
 * null when the file is missing from this deployment.
 */
const VENDOR_REDOC = new URL('../../vendor/redoc/', import.meta.url);
let redoc: { body: Buffer; etag: string } | null | undefined;
function redocBundle(): typeof redoc {
  if (redoc !== undefined) return redoc;
  try {
    const { version } = JSON.parse(fs.readFileSync(new URL('source.json', VENDOR_REDOC), 'utf8')) as { version: string };
    const source = fs.readFileSync(new URL('redoc.standalone.js', VENDOR_REDOC), 'utf8');
    // The bundle shows Redocly's attribution logo from their CDN: served from here instead, so
    // the page makes no request outside Kiln's origin (MIT: modifying the bundle is allowed). Its
    // source map is not served, so the comment naming it goes too.
    const body = Buffer.from(source
      .replace(/https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini(-full)?\.svg/g, '/docs/redocly-logo.svg')
      .replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n'));
    redoc = { body, etag: `"redoc-${version}-${body.byteLength.toString(36)}"` };
  } catch {
    redoc = null;
  }
  return redoc;
}

// The init script is a file, not inline, so that the page's CSP needs no 'unsafe-inline' script.
// The bundle is a classic script that defines the global Redoc; the page loads it first.
const DOCS_INIT = `// Renders /api/v1/openapi.json with Redoc's standalone bundle (served by Kiln, no CDN).
const el = document.getElementById('redoc');
Redoc.init(el.dataset.specUrl, {
  expandResponses: '200,201,202',
  theme: { colors: { primary: { main: '#c2410c' } } },
}, el);
`;

function docsPage(): Response {
  const ok = redocBundle() != null;
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Kiln API reference</title>
<link rel="icon" href="/console/icon.svg" type="image/svg+xml">
<style>body { margin: 0; }</style>
</head>
<body>
${ok
    ? `<div id="redoc" data-spec-url="/api/v1/openapi.json"></div>
<script src="/docs/redoc.standalone.js"></script>
<script src="/docs/init.js"></script>`
    : `<main><h1>Kiln API reference</h1><p>The renderer (Redoc's bundle, <code>vendor/redoc/redoc.standalone.js</code>) is missing from this deployment. The OpenAPI document itself is at <a href="/api/v1/openapi.json">/api/v1/openapi.json</a>.</p></main>`}
</body>
</html>
`;
  return page(html, 'text/html; charset=utf-8', { 'content-security-policy': DOCS_CSP, 'cache-control': 'no-cache' });
}

export function mountConsole(app: H3, ctx: Context): void {
  app.get('/', () => new Response(null, { status: 302, headers: { location: '/console/' } }));
  // The router treats /console and /console/ alike; the page wants the slash (relative links).
  app.get('/console', async (event) => {
    if (!event.url.pathname.endsWith('/')) return new Response(null, { status: 301, headers: { location: '/console/' } });
    try {
      return await consolePage(ctx);
    } catch (e) {
      ctx.log.error('console build failed', { message: (e as Error)?.message });
      throw errors.unavailable('The console could not be built; see the server log.');
    }
  });
  app.get('/console/icon.svg', () => page(ICON, 'image/svg+xml', { 'cache-control': 'public, max-age=86400' }));
  app.get('/console/assets/**', (event) => consoleAsset(event));
  app.get('/docs', () => docsPage());
  app.get('/docs/redocly-logo.svg', () => page(REDOCLY_LOGO, 'image/svg+xml', { 'cache-control': 'public, max-age=86400' }));
  app.get('/docs/init.js', () => page(DOCS_INIT, 'text/javascript; charset=utf-8', { 'cache-control': 'no-cache' }));
  app.get('/docs/redoc.standalone.js', (event) => {
    const r = redocBundle();
    if (!r) throw new ApiError('not_found', 'The API reference renderer is not installed.');
    if (event.req.headers.get('if-none-match') === r.etag) return new Response(null, { status: 304, headers: { etag: r.etag } });
    return new Response(r.body as unknown as BodyInit, {
      headers: { 'content-type': 'text/javascript; charset=utf-8', etag: r.etag, 'cache-control': 'public, max-age=3600', ...BASE_HEADERS },
    });
  });
}
