// SSO test fixtures: a real OpenID provider (panva's oidc-provider) on 127.0.0.1 with its
// development login and consent forms, users defined by the test, and one registered client whose
// redirect URI is Kiln's /auth/callback. Plus a cookie-jar walk through those forms over plain
// HTTP, for tests that need a sign-in without a browser.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { onCleanup } from './_setup.ts';

// oidc-provider's advice at start (an in-memory adapter, development keys and forms, Node 20: all
// what a test wants) is not test output. Filtered before it loads, as some of it comes at import.
for (const level of ['warn', 'info'] as const) {
  const original = console[level];
  console[level] = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && args[0].startsWith('oidc-provider ')) return;
    original.apply(console, args);
  };
}
const { default: Provider } = await import('oidc-provider');

export interface TestUser {
  email?: string;
  email_verified?: boolean;
  groups?: string[];
}

export interface TestProvider {
  issuer: string;
  clientId: string;
  clientSecret: string | undefined;
  /** Login name (the `sub`) → claims. A login not listed signs in with no email. */
  users: Map<string, TestUser>;
  /** Registers the client with these redirect URIs (once, after Kiln's servers know their URLs); the provider answers from then on. */
  register(redirectUris: string[]): void;
  /** An outage: 'hang' accepts requests and never answers; 'reset' drops each connection; null: back to normal. */
  outage(mode: 'hang' | 'reset' | null): void;
  close(): Promise<void>;
}

export async function startProvider(opts: {
  clientId?: string;
  /** null: a public client (token_endpoint_auth_method none, PKCE alone). */
  clientSecret?: string | null;
  /** false: the scopes' claims only from UserInfo, as OIDC Core has it for the code flow (oidc-provider's default). */
  claimsInIdToken?: boolean;
} = {}): Promise<TestProvider> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const users = new Map<string, TestUser>();
  const clientId = opts.clientId ?? 'kiln-console';
  const clientSecret = opts.clientSecret === null ? undefined : (opts.clientSecret ?? 'a-test-client-secret-that-is-long-enough');
  const register = (redirectUris: string[]) => {
    const provider = new Provider(issuer, {
      clients: [{
        client_id: clientId,
        ...(clientSecret ? { client_secret: clientSecret, token_endpoint_auth_method: 'client_secret_basic' } : { token_endpoint_auth_method: 'none' }),
        redirect_uris: redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
      }],
      // Every authorization request must carry a PKCE challenge (S256), confidential client or not.
      pkce: { required: () => true },
      // By default the claims of the requested scopes go into the ID token too (not only UserInfo).
      conformIdTokenClaims: opts.claimsInIdToken === false,
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
      cookies: { keys: ['a-test-cookie-key-for-the-provider'] },
      async findAccount(_ctx: unknown, sub: string) {
        const u = users.get(sub) ?? {};
        return {
          accountId: sub,
          async claims() {
            return { sub, name: sub, ...u };
          },
        };
      },
    } as any);
    const handle = provider.callback();
    server.on('request', (req, res) => {
      if (down === 'hang') { hung.add(res); return; }
      if (down === 'reset') { req.socket.destroy(); return; }
      handle(req, res);
    });
  };
  let down: 'hang' | 'reset' | null = null;
  const hung = new Set<http.ServerResponse>();
  const outage = (mode: 'hang' | 'reset' | null) => {
    down = mode;
    if (mode === null) {
      for (const r of hung) r.destroy();
      hung.clear();
    }
  };
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    outage(null);
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  onCleanup(close);
  return { issuer, clientId, clientSecret, users, register, outage, close };
}

/** A minimal cookie jar for walking the provider's forms with fetch. */
class Jar {
  private cookies = new Map<string, string>();
  take(res: Response) {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(c) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

/**
 * Signs `login` in at the provider from an authorization URL (Kiln's /auth/login Location), over
 * HTTP: the login form, then the consent form. Returns the URL the provider sends the browser back
 * to (Kiln's /auth/callback with code and state, or with an error), without following it.
 */
export async function providerSignIn(authorizeUrl: string, login: string): Promise<URL> {
  const jar = new Jar();
  let url = authorizeUrl;
  let method = 'GET';
  let body: string | undefined;
  for (let i = 0; i < 20; i++) {
    const res = await fetch(url, {
      method, body, redirect: 'manual',
      headers: { cookie: jar.header(), ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    });
    jar.take(res);
    method = 'GET';
    body = undefined;
    if (res.status >= 300 && res.status < 400) {
      const next = new URL(res.headers.get('location')!, url);
      if (next.pathname.endsWith('/auth/callback')) return next;
      url = next.href;
      continue;
    }
    const html = await res.text();
    if (res.status !== 200) throw new Error(`provider answered ${res.status}: ${html.slice(0, 300)}`);
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="(\w+)"/.exec(html)?.[1];
    if (!action || !prompt) throw new Error(`no form on the provider's page: ${html.slice(0, 300)}`);
    url = new URL(action.replace(/&amp;/g, '&'), url).href;
    method = 'POST';
    body = prompt === 'login'
      ? new URLSearchParams({ prompt, login, password: 'anything' }).toString()
      : new URLSearchParams({ prompt }).toString();
  }
  throw new Error('too many steps at the provider');
}
