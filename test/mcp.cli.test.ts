// The MCP operator and development commands through the real CLI: `identity link|unlink|list`, and the
// development issuer flow end to end (`kiln serve`'s bundled dev issuer, `kiln dev-token`, an SDK client),
// `kiln dev-issuer` until SIGTERM, and both refused without KILN_DEV_ISSUER=1.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { api, createAccount, createKey, createTestDb, startServer } from './_setup.ts';
import { connectV1, link, ok, toolError } from './_mcp.ts';
import { spawnKiln } from './_live.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'kiln.js');
let dataDir: string;

before(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'kiln-mcp-cli-'));
});
after(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

async function kiln(args: string[], env: Record<string, string | undefined> = {}) {
  const base = { ...process.env, KILN_LOG: 'silent', KILN_DATA_DIR: dataDir } as Record<string, string | undefined>;
  delete base.KILN_DEV_ISSUER;
  delete base.OIDC_ISSUER;
  try {
    const r = await promisify(execFile)(process.execPath, [BIN, ...args], { env: { ...base, ...env } as NodeJS.ProcessEnv, timeout: 60_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e: any) {
    return { code: e.code as number, stdout: e.stdout as string, stderr: e.stderr as string };
  }
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as { port: number };
  await new Promise((resolve) => s.close(resolve));
  return port;
}

async function waitFor(url: string, timeoutMs = 10_000): Promise<Response> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(url);
      if (res.ok) return res;
    } catch {
      /* not up yet */
    }
    if (Date.now() > until) throw new Error(`${url} did not come up`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('dev-issuer and dev-token are refused unless KILN_DEV_ISSUER=1', async () => {
  const user = crypto.randomUUID();
  for (const args of [['dev-token', '--user', user], ['dev-issuer']]) {
    const r = await kiln(args);
    assert.equal(r.code, 1, args.join(' '));
    assert.match(r.stderr, /KILN_DEV_ISSUER=1/);
    assert.equal(r.stdout, '');
  }
});

test('development flow: bundled dev issuer + identity link + dev-token → an MCP client acts as the user', async () => {
  const port = await freePort();
  const srv = await startServer({ config: { devIssuer: true, devIssuerPort: port, dataDir, oidcIssuer: undefined } });
  const issuer = `http://127.0.0.1:${port}`;
  const jwks = await (await waitFor(`${issuer}/jwks.json`)).json();
  assert.equal(jwks.keys.length, 1);
  assert.equal(jwks.keys[0].d, undefined, 'no private material published');
  const meta = await (await fetch(`${srv.origin}/.well-known/oauth-protected-resource/mcp`)).json();
  assert.deepEqual(meta.authorization_servers, [issuer]);

  const acct = await createAccount(srv.db.sql);
  const env = { KILN_DEV_ISSUER: '1', KILN_DEV_ISSUER_PORT: String(port), MCP_URL: `${srv.origin}/mcp`, DATABASE_URL: srv.db.url };
  const linked = await kiln(['identity', 'link', '--user', acct.id, '--issuer', issuer, '--subject', acct.id], env);
  assert.equal(linked.code, 0, linked.stderr);
  assert.deepEqual(JSON.parse(linked.stdout), { ...JSON.parse(linked.stdout), issuer, subject: acct.id, user: acct.id, workspace: null });

  const minted = await kiln(['dev-token', '--user', acct.id, '--ttl', '600'], env);
  assert.equal(minted.code, 0, minted.stderr);
  const token = minted.stdout.trim();
  assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
  assert.match(minted.stderr, /kiln identity link --user/);

  const client = await connectV1(`${srv.origin}/mcp`, token);
  try {
    const usage = await ok(client, 'get_usage');
    const key = (await createKey(srv.db.sql, acct.id)).key;
    assert.deepEqual(usage, (await api(srv.base, key, '/usage')).body);

    const unlinked = await kiln(['identity', 'unlink', '--issuer', issuer, '--subject', acct.id], env);
    assert.equal(unlinked.code, 0, unlinked.stderr);
    assert.equal((await toolError(client, 'get_usage')).type, 'unauthorized');
  } finally {
    await client.close();
    await srv.close();
  }
});

test('kiln dev-token with the env of a running kiln api: MCP accepts its token (PORT, KILN_PUBLIC_URL, MCP_URL set); with another env it warns', async () => {
  const db = await createTestDb();
  const acct = await createAccount(db.sql);
  const issuerPort = await freePort();
  const issuer = `http://127.0.0.1:${issuerPort}`;
  await link(db.sql, issuer, acct.id, acct.id);
  for (const variant of ['PORT', 'PORT and KILN_PUBLIC_URL', 'PORT and MCP_URL'] as const) {
    const port = await freePort();
    const env: Record<string, string> = {
      KILN_DATA_DIR: dataDir, KILN_DEV_ISSUER: '1', KILN_DEV_ISSUER_PORT: String(issuerPort), DATABASE_URL: db.url, PORT: String(port),
    };
    // Another host name than the default 127.0.0.1: the audience follows the public URL, not the request.
    if (variant === 'PORT and KILN_PUBLIC_URL') env.KILN_PUBLIC_URL = `http://localhost:${port}/`;
    if (variant === 'PORT and MCP_URL') env.MCP_URL = `http://localhost:${port}/mcp`;
    const expected = variant === 'PORT' ? `http://127.0.0.1:${port}/mcp` : `http://localhost:${port}/mcp`;
    const api = await spawnKiln('api', db.url, env);
    try {
      await waitFor(`${issuer}/jwks.json`);
      const minted = await kiln(['dev-token', '--user', acct.id], env);
      assert.equal(minted.code, 0, minted.stderr);
      assert.match(minted.stderr, new RegExp(`audience ${expected.replace(/[.:/]/g, '\\$&')}[ ,)]`), `${variant}: stderr names the audience`);
      assert.doesNotMatch(minted.stderr, /warning/, `${variant}: the server expects this audience`);
      const token = minted.stdout.trim();
      const aud = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).aud;
      assert.equal(aud, expected, variant);
      const meta = await (await fetch(`http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`)).json();
      assert.equal(meta.resource, aud, `${variant}: the audience is the resource the server announces`);
      const client = await connectV1(`http://127.0.0.1:${port}/mcp`, token);
      try {
        assert.equal((await ok(client, 'get_usage')).tier, 'pro', variant);
      } finally {
        await client.close();
      }
      // The trap the audience line and the check are for: minting in a shell set up otherwise.
      const other: Record<string, string> = variant === 'PORT'
        ? { ...env, PORT: String(await freePort()) }
        : { ...env, KILN_PUBLIC_URL: `http://127.0.0.1:${port}`, MCP_URL: '' };
      const stray = await kiln(['dev-token', '--user', acct.id], other);
      assert.equal(stray.code, 0, stray.stderr);
      assert.match(stray.stderr, variant === 'PORT'
        ? new RegExp(`warning: no server answered at http://127\\.0\\.0\\.1:${other.PORT}`)
        : new RegExp(`warning: the server at http://127\\.0\\.0\\.1:${port} expects the audience http://localhost:${port}/mcp, not http://127\\.0\\.0\\.1:${port}/mcp`), variant);
    } finally {
      await api.stop();
    }
  }
});

test('kiln.link_identity refuses unknown users and workspaces the user is not a member of', async () => {
  const srv = await startServer();
  const acct = await createAccount(srv.db.sql);
  const owner = await createAccount(srv.db.sql);
  const [ws] = await srv.db.sql`select * from kiln.create_workspace('W', ${owner.id})`;
  const linkAs = (user: string, workspace: string | null) =>
    srv.db.sql`select * from kiln.link_identity('https://id.example', 's', ${user}::uuid, ${workspace}::uuid, null)`;
  await assert.rejects(linkAs(acct.id, ws.id), (e: any) => e.code === 'KF001' && /not a member/.test(e.message));
  await assert.rejects(linkAs(crypto.randomUUID(), null), (e: any) => e.code === 'KN001');
  await assert.rejects(srv.db.sql`select kiln.link_identity('', 's', ${acct.id}::uuid, null, null)`, (e: any) => e.code === 'KI001');
  await srv.db.sql`select kiln.add_workspace_member(${ws.id}, ${acct.id}, 'member')`;
  const [row] = await linkAs(acct.id, ws.id);
  assert.equal(row.workspace_id, ws.id);
  // Re-linking moves the identity (an operator decision); the key stays (issuer, subject).
  const [moved] = await linkAs(owner.id, null);
  assert.deepEqual([moved.account_id, moved.workspace_id], [owner.id, null]);
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.identities where issuer = 'https://id.example'`;
  assert.equal(n, 1);
});

test('kiln dev-issuer serves discovery and JWKS on loopback until SIGTERM', async () => {
  const port = await freePort();
  const child = spawn(process.execPath, [BIN, 'dev-issuer'], {
    env: { ...process.env, KILN_LOG: 'silent', KILN_DATA_DIR: dataDir, KILN_DEV_ISSUER: '1', KILN_DEV_ISSUER_PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  try {
    const doc = await (await waitFor(`http://127.0.0.1:${port}/.well-known/openid-configuration`, 20_000)).json();
    assert.equal(doc.issuer, `http://127.0.0.1:${port}`);
    assert.equal(doc.jwks_uri, `http://127.0.0.1:${port}/jwks.json`);
    assert.match(out, /Never use it in production/);
  } finally {
    child.kill('SIGTERM');
  }
  const code = await new Promise((resolve) => child.on('exit', resolve));
  assert.equal(code, 0);
});
