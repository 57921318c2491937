// `kiln keys [list] | create NAME --scopes … | rotate ID [--grace SECONDS] | revoke ID`: the keys
// of your billing scope through the API (the `keys` scope). A new secret is printed once.

import type { CreateKeyRequest, Key } from '../../client/index.ts';
import { intFlag, microsFlag, parseArgs, UsageError } from '../args.ts';
import { clientFromEnv, EXIT } from './exit.ts';
import { dim, dollars, green, interactive, jsonLine } from './live.ts';

export const KEYS_HELP =
  '[list] | create NAME [--scopes read,write,keys,admin (default read,write)] [--rpm N] [--budget-micros N] [--expires-at ISO-8601]'
  + ' | rotate ID [--grace SECONDS (or 90m, 24h, 7d; default 24h)] | revoke ID [--json] — your scope\'s API keys';

const SCOPES = ['read', 'write', 'keys', 'admin'];

export async function keys(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case undefined:
    case 'list': return list(sub === undefined ? argv : rest);
    case 'create': return create(rest);
    case 'rotate': return rotate(rest);
    case 'revoke': return revoke(rest);
    default:
      if (sub.startsWith('-')) return list(argv);
      throw new UsageError(`unknown subcommand ${JSON.stringify(sub)} (list, create, rotate, revoke)`);
  }
}

function status(k: Key): string {
  if (k.revokedAt) return 'revoked';
  if (k.expiresAt && new Date(k.expiresAt) <= new Date()) return 'expired';
  return 'active';
}

/** The table's cells of one key: id, prefix, status, scopes, name, budget, when last used. */
function cells(k: Key): string[] {
  const budget = k.budgetMicros == null ? '' : `${dollars(k.usedMicros)} of ${dollars(k.budgetMicros)}`;
  return [k.id, `${k.prefix}…`, status(k), k.scopes.join(','), (k.name ?? '').slice(0, 24), budget, k.lastUsedAt ? `used ${k.lastUsedAt}` : 'never used'];
}

/** The keys as a table under a header, each column as wide as its widest cell. */
function table(keys: Key[]): string {
  const rows = [['id', 'prefix', 'status', 'scopes', 'name', 'budget', 'last used'], ...keys.map(cells)];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const lead = (r: string[]) => r.slice(0, -1).map((c, i) => `${c.padEnd(widths[i]!)}  `).join('');
  return rows.map((r, i) => (i === 0 ? dim(lead(r) + r.at(-1)!) : lead(r) + dim(r.at(-1)!))).join('\n') + '\n';
}

async function list(argv: string[]): Promise<number> {
  const { values: flags } = parseArgs(argv, { options: { json: { type: 'boolean' } } });
  const page = await clientFromEnv().keys.list();
  if (interactive(flags.json)) {
    process.stdout.write(page.data.length ? table(page.data) : dim('no keys\n'));
  } else for (const k of page.data) jsonLine(process.stdout, k);
  return EXIT.ok;
}

/** `24h`, `90m`, `3600s`, `7d` or a number of seconds. */
function graceFlag(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const m = /^(\d{1,7})([smhd]?)$/.exec(v.trim());
  if (!m) throw new UsageError('--grace must be a number of seconds, or a duration such as 24h, 90m or 30s (0 ends the previous secret at once)');
  const s = Number(m[1]) * ({ '': 1, s: 1, m: 60, h: 3600, d: 86_400 } as const)[m[2] as '' | 's' | 'm' | 'h' | 'd'];
  if (s > 7 * 86_400) throw new UsageError('--grace must be at most 7d');
  return s;
}

function printSecret(flags: { json?: boolean }, event: string, k: Key & { key: string }): void {
  if (interactive(flags.json)) {
    process.stdout.write(`${green('✔')} ${event} key ${k.id} (${k.scopes.join(', ')})\n\n  ${k.key}\n\n${dim('This secret is shown once: store it now.')}\n`);
  } else jsonLine(process.stdout, { event, ...k });
}

async function create(argv: string[]): Promise<number> {
  const { values: flags, positionals } = parseArgs(argv, {
    options: { scopes: { type: 'string' }, rpm: { type: 'string' }, 'budget-micros': { type: 'string' }, 'expires-at': { type: 'string' }, 'require-end-user': { type: 'boolean' }, json: { type: 'boolean' } },
    positionals: { min: 1, max: 1, names: 'NAME' },
  });
  const scopes = String(flags.scopes ?? 'read,write').split(',').map((s) => s.trim()).filter(Boolean);
  if (!scopes.length || scopes.some((s) => !SCOPES.includes(s))) throw new UsageError(`--scopes must be a comma-separated set of ${SCOPES.join(', ')}`);
  const budget = microsFlag(flags['budget-micros'], 'budget-micros', false);
  const body: CreateKeyRequest = {
    name: positionals[0]!,
    scopes: [...new Set(scopes)] as CreateKeyRequest['scopes'],
    ...(flags.rpm !== undefined && { rpm: intFlag(flags.rpm, 'rpm', 1, 1_000_000) }),
    ...(budget != null && { budgetMicros: Number(budget) }),
    ...(flags['expires-at'] !== undefined && { expiresAt: flags['expires-at'] }),
    ...(flags['require-end-user'] === true && { requireEndUser: true }),
  };
  printSecret(flags, 'created', await clientFromEnv().keys.create(body));
  return EXIT.ok;
}

async function rotate(argv: string[]): Promise<number> {
  const { values: flags, positionals } = parseArgs(argv, {
    options: { grace: { type: 'string' }, json: { type: 'boolean' } },
    positionals: { min: 1, max: 1, names: 'ID' },
  });
  const grace = graceFlag(flags.grace);
  const k = await clientFromEnv().keys.rotate(positionals[0]!, grace === undefined ? {} : { graceSeconds: grace });
  printSecret(flags, 'rotated', k);
  if (interactive(flags.json)) process.stdout.write(dim(`The previous secret keeps working for ${grace ?? 86_400} s.\n`));
  return EXIT.ok;
}

async function revoke(argv: string[]): Promise<number> {
  const { values: flags, positionals } = parseArgs(argv, { options: { json: { type: 'boolean' } }, positionals: { min: 1, max: 1, names: 'ID' } });
  const k = await clientFromEnv().keys.revoke(positionals[0]!);
  if (interactive(flags.json)) process.stdout.write(`${green('✔')} revoked key ${k.id} (${k.prefix}…) at ${k.revokedAt}\n`);
  else jsonLine(process.stdout, { event: 'revoked', ...k });
  return EXIT.ok;
}
