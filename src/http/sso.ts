// /auth/login, /auth/callback and /auth/logout: the console's single sign-on (auth/sso.ts), outside
// /api/v1 like /console and /healthz. Browsers navigate here, so failures are small HTML pages
// (with the status) rather than JSON. Without KILN_OIDC_ISSUER only /auth/logout exists.

import { createHash } from 'node:crypto';
import { getCookie, type H3, type H3Event } from 'h3';
import { clientIp, publicOrigin } from '../auth/access.ts';
import { sessionSecret } from '../auth/session-cookie.ts';
import { beginSignIn, clearSessionCookie, clearTransactionCookie, completeSignIn, signOut, TRANSACTION_COOKIE, type SignInResult } from '../auth/sso.ts';
import type { Context } from '../context.ts';
import { errors } from '../errors.ts';
import { errorFields } from '../log.ts';
import { requestContext } from '../telemetry/http.ts';

const STYLE = 'body{font:16px/1.5 system-ui,sans-serif;margin:0;display:grid;place-items:center;min-height:100vh;background:#f6f5f4;color:#1c1917}'
  + 'main{max-width:32rem;margin:1rem;padding:2rem;background:#fff;border-radius:12px;box-shadow:0 1px 3px #0002}'
  + 'h1{font-size:1.3rem;margin:0 0 .75rem}a{color:#c2410c}'
  + '@media (prefers-color-scheme:dark){body{background:#1c1917;color:#f5f5f4}main{background:#292524}a{color:#fb923c}}';
const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');
const PAGE_CSP = `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(status: number, title: string, text: string, setCookies: string[] = []): Response {
  const html = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer">
<title>${escape(title)} · Kiln</title><style>${STYLE}</style></head>
<body><main><h1>${escape(title)}</h1><p>${escape(text)}</p><p><a href="/console/">Back to the Kiln console</a></p></main></body>
</html>
`;
  const headers = new Headers({
    'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'content-security-policy': PAGE_CSP,
    'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer', 'x-frame-options': 'DENY',
  });
  for (const c of setCookies) headers.append('set-cookie', c);
  return new Response(html, { status, headers });
}

const START_AGAIN = 'Start again from the console\'s sign-in page.';

/** The page (or redirect) for a callback's result. */
function answer(ctx: Context, r: SignInResult): Response {
  const clear = clearTransactionCookie(ctx);
  switch (r.outcome) {
    case 'signed_in': {
      const headers = new Headers({ location: '/console/', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' });
      headers.append('set-cookie', clear);
      headers.append('set-cookie', r.cookie);
      return new Response(null, { status: 302, headers });
    }
    case 'refused':
      return page(403, 'You may not sign in here', r.reason === 'email_in_use'
        ? `A Kiln account with the email ${r.email ?? ''} exists but is not linked to this sign-in. An operator can link it with kiln identity link; nothing was created.`
        : `This Kiln does not let ${r.email ? `${r.email}` : 'this identity'} in: it is not linked to an account, and its email is not a verified address of an allowed domain. Ask an operator for access; nothing was created.`,
      [clear]);
    case 'invalid': {
      const text = {
        no_transaction: `This sign-in expired, was started in another browser, or already finished. ${START_AGAIN}`,
        state_mismatch: `The answer from the sign-in provider does not belong to the sign-in this browser started (its state differs). ${START_AGAIN}`,
        provider_error: `The sign-in provider did not sign you in${r.detail ? ` (${r.detail})` : ''}. ${START_AGAIN}`,
        code_refused: `The sign-in provider refused this sign-in's code${r.detail ? ` (${r.detail})` : ''}: a code works once. ${START_AGAIN}`,
        replayed: `This sign-in was already used. ${START_AGAIN}`,
      }[r.reason];
      return page(400, 'Sign-in failed', text, [clear]);
    }
    case 'unavailable':
      return page(503, 'Sign-in unavailable', 'The sign-in provider could not be reached. Try again in a moment.', [clear]);
  }
}

export function mountSso(app: H3, base: Context): void {
  const o = base.config.oidc;
  if (o) {
    app.get('/auth/login', async (event: H3Event) => {
      const ctx = requestContext(base, event.req);
      try {
        const { location, cookie } = await beginSignIn(ctx, o);
        const headers = new Headers({ location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' });
        headers.append('set-cookie', cookie);
        return new Response(null, { status: 302, headers });
      } catch (e) {
        ctx.log.warn('sso: the provider could not be discovered', errorFields(e));
        return page(503, 'Sign-in unavailable', 'The sign-in provider could not be reached. Try again in a moment.');
      }
    });
    app.get('/auth/callback', async (event: H3Event) => {
      const ctx = requestContext(base, event.req);
      const r = await completeSignIn(ctx, o, event.url, getCookie(event, TRANSACTION_COOKIE), {
        ip: clientIp(ctx, event), requestId: event.context.requestId, userAgent: event.req.headers.get('user-agent'),
      });
      return answer(ctx, r);
    });
  }
  // Sign-out: the console posts it (fetch, same origin). Another origin's POST is refused like any
  // cookie-authenticated unsafe request, so a foreign page cannot sign the user out either.
  app.post('/auth/logout', async (event: H3Event) => {
    const ctx = requestContext(base, event.req);
    if (event.req.headers.get('origin') !== publicOrigin(ctx)) throw errors.crossOrigin();
    const secret = sessionSecret(event);
    if (secret) await signOut(ctx, secret, { ip: clientIp(ctx, event), requestId: event.context.requestId });
    return new Response(null, { status: 204, headers: { 'set-cookie': clearSessionCookie(ctx), 'cache-control': 'no-store' } });
  });
}
