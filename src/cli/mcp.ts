// CLI commands for the MCP endpoint (part of the command table in commands.ts): link OIDC
// identities to accounts, and the development issuer + token minting (refused unless KILN_DEV_ISSUER=1).
import { withDb, type Command } from './command.ts';
import { linkIdentity, type IdentityRow } from '../db/sql/link_identity.ts';
import { listIdentities } from '../db/sql/list_identities.ts';
import { unlinkIdentity } from '../db/sql/unlink_identity.ts';
import { parseArgs, required, UsageError, uuidFlag } from './args.ts';

/** The development issuer, loaded by the commands that use it only (the others start without it and its JOSE library). */
const devIssuer = () => import('../mcp/dev-issuer.ts');

/** The MCP mount (and the server it brings), imported only by the commands that use its settings. */
const mount = () => import('../mcp/mount.ts');

function identityJson(i: IdentityRow) {
  return {
    issuer: i.issuer,
    subject: i.subject,
    user: i.account_id,
    workspace: i.workspace_id,
    email: i.email,
    created_at: i.created_at,
    last_seen_at: i.last_seen_at,
  };
}

/** How long dev-token waits for the server it mints for to say which audience it expects. */
const PROBE_TIMEOUT_MS = 2000;

/**
 * Asks the server the token is for (its RFC 9728 document at the audience's origin) whether it
 * expects this audience: a warning to print, or null when it does. The audience comes from this
 * process's environment (mcpUrlOf, as in the server), so a server started with another PORT,
 * KILN_PUBLIC_URL or MCP_URL would refuse the token with 401 "aud claim invalid".
 */
async function audienceWarning(audience: string): Promise<string | null> {
  const [{ resourceMetadataUrl }, { DEV_ISSUER_ENV }] = await Promise.all([import('../mcp/auth.ts'), devIssuer()]);
  const url = resourceMetadataUrl(audience);
  const set = 'set PORT, KILN_PUBLIC_URL and MCP_URL here as for the server';
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
  } catch {
    return `no server answered at ${new URL(audience).origin}, the origin of the token's audience; if Kiln runs elsewhere, ${set}`;
  }
  const resource = res.ok ? ((await res.json().catch(() => null)) as { resource?: unknown } | null)?.resource : undefined;
  await res.body?.cancel().catch(() => {});
  if (typeof resource !== 'string') return `the server at ${new URL(audience).origin} serves no MCP endpoint at ${audience} (is it running with ${DEV_ISSUER_ENV}=1?)`;
  if (resource !== audience) return `the server at ${new URL(audience).origin} expects the audience ${resource}, not ${audience}: ${set}`;
  return null;
}

function ttlFlag(raw: unknown): number | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !/^\d{1,7}$/.test(raw) || Number(raw) < 1 || Number(raw) > 30 * 24 * 3600) {
    throw new UsageError('--ttl must be a number of seconds from 1 to 2592000 (30 days)');
  }
  return Number(raw);
}

export const mcpCommands: Record<string, Command> = {
  'identity link': {
    help: '--user ID --issuer URL --subject SUB [--workspace ID] [--email E] — let an OIDC sign-in act as USER on the MCP endpoint (billing WORKSPACE\'s Team plan when given)',
    async run(argv, config) {
      const f = parseArgs(argv, {
        options: { user: { type: 'string' }, issuer: { type: 'string' }, subject: { type: 'string' }, workspace: { type: 'string' }, email: { type: 'string', allowEmpty: true } },
      }).values;
      const user = uuidFlag(f, 'user')!;
      const issuer = required(f, 'issuer');
      const subject = required(f, 'subject');
      const workspace = uuidFlag(f, 'workspace', true);
      const configured = (await mount()).issuerOf(config)?.issuer;
      if (configured && configured !== issuer) {
        process.stderr.write(`note: this server trusts tokens from ${configured}, not ${issuer}; the link only takes effect for that issuer\n`);
      }
      return withDb(config, async (sql) => {
        const [i] = await linkIdentity(sql, issuer, subject, user, workspace ?? null, f.email ?? null);
        return identityJson(i!);
      });
    },
  },
  'identity unlink': {
    help: '--issuer URL --subject SUB',
    async run(argv, config) {
      const f = parseArgs(argv, { options: { issuer: { type: 'string' }, subject: { type: 'string' } } }).values;
      const issuer = required(f, 'issuer');
      const subject = required(f, 'subject');
      return withDb(config, async (sql) => {
        const [i] = await unlinkIdentity(sql, issuer, subject);
        return { ...identityJson(i!), unlinked: true };
      });
    },
  },
  'identity list': {
    help: '--user ID',
    async run(argv, config) {
      const f = parseArgs(argv, { options: { user: { type: 'string' } } }).values;
      const user = uuidFlag(f, 'user')!;
      return withDb(config, async (sql) => {
        const rows = await listIdentities(sql, user);
        return rows.map(identityJson);
      });
    },
  },

  'dev-issuer': {
    help: 'DEVELOPMENT ONLY (KILN_DEV_ISSUER=1): serve the local OIDC issuer (discovery + JWKS) on 127.0.0.1:KILN_DEV_ISSUER_PORT until Ctrl-C',
    async run(argv, config) {
      parseArgs(argv, { options: {} });
      const { DevIssuerDisabledError, startDevIssuer } = await devIssuer();
      if (!config.devIssuer) throw new DevIssuerDisabledError();
      const dev = await startDevIssuer({ dataDir: config.dataDir, port: config.devIssuerPort, env: (await mount()).DEV_ENV });
      process.stdout.write(
        [
          `Development OIDC issuer on ${dev.issuer} (JWKS ${dev.jwksUrl}). Never use it in production.`,
          `Start Kiln with KILN_DEV_ISSUER=1 (and no OIDC_ISSUER), then: kiln dev-token --user <USER_ID>`,
          '',
        ].join('\n'),
      );
      await new Promise<void>((resolve) => {
        for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => resolve());
      });
      await dev.close();
      return undefined;
    },
  },
  'dev-token': {
    help: 'DEVELOPMENT ONLY (KILN_DEV_ISSUER=1): --user ID [--ttl SECONDS] [--email E] — print a token for the MCP endpoint signed by the dev issuer (subject = user id)',
    async run(argv, config) {
      const f = parseArgs(argv, {
        options: { user: { type: 'string' }, ttl: { type: 'string' }, email: { type: 'string', allowEmpty: true } },
      }).values;
      const user = uuidFlag(f, 'user')!;
      const ttl = ttlFlag(f.ttl);
      const { DevIssuerDisabledError, devIssuerUrl, mintDevToken } = await devIssuer();
      if (!config.devIssuer) throw new DevIssuerDisabledError();
      const issuer = devIssuerUrl(config.devIssuerPort);
      const { DEV_ENV, mcpUrlOf } = await mount();
      // The server's own derivation (MCP_URL, else KILN_PUBLIC_URL + /mcp, else http://HOST:PORT/mcp).
      const audience = mcpUrlOf(config);
      if (config.oidcIssuer && config.oidcIssuer !== issuer) {
        process.stderr.write(`warning: OIDC_ISSUER is ${config.oidcIssuer}; a server with that setting refuses development tokens\n`);
      }
      const token = await mintDevToken({ dataDir: config.dataDir, sub: user, email: f.email, audience, issuer, ttl, env: DEV_ENV });
      process.stderr.write(
        `token for subject ${user} (issuer ${issuer}, audience ${audience}, ${ttl ?? 3600} s). ` +
          `Link it once with: kiln identity link --user ${user} --issuer ${issuer} --subject ${user}\n`,
      );
      const warning = await audienceWarning(audience);
      if (warning) process.stderr.write(`warning: ${warning}\n`);
      // The bare token on stdout, so `$(kiln dev-token --user …)` works.
      process.stdout.write(`${token}\n`);
      return undefined;
    },
  },
};
