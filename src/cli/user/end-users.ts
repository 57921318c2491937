// `kiln end-user set ID --budget MICROS|--budget-usd X --period day|month [--rpm N] | get ID | rm ID`:
// budgets per end user (docs/usage.md, "Budgets per end user") through the API. Setting and
// removing need the `keys` scope; reading, `read`.

import type { EndUserBudget } from '../../client/index.ts';
import { intFlag, microsFlag, oneOf, parseArgs, UsageError } from '../args.ts';
import { clientFromEnv, EXIT } from './exit.ts';
import { dim, dollars, green, interactive, jsonLine } from './live.ts';

export const END_USER_HELP =
  'set ID (--budget MICROS | --budget-usd X) --period day|month [--rpm N] | get ID | rm ID [--json]'
  + ' — a budget per end user (your own user, as requests name it with endUser): per UTC day or calendar month, with an optional rpm';

const PERIODS = ['day', 'month'] as const;

export async function endUser(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'set': return set(rest);
    case 'get': return get(rest);
    case 'rm': case 'remove': return remove(rest);
    default:
      throw new UsageError(sub === undefined ? 'a subcommand is required (set, get, rm)' : `unknown subcommand ${JSON.stringify(sub)} (set, get, rm)`);
  }
}

/** `--budget-usd 2.50` → 2500000 micros (at most 6 decimals). */
export function usdFlag(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const m = /^(\d{1,12})(?:\.(\d{1,6}))?$/.exec(v.trim());
  if (!m) throw new UsageError('--budget-usd must be an amount of US dollars such as 2.50 (at most 6 decimals)');
  return Number(m[1]) * 1_000_000 + Number((m[2] ?? '').padEnd(6, '0'));
}

function print(flags: { json?: boolean }, event: string | null, b: EndUserBudget): void {
  if (!interactive(flags.json)) {
    jsonLine(process.stdout, event ? { event, ...b } : b);
    return;
  }
  const head = event ? `${green('✔')} ${event} the budget of end user ${JSON.stringify(b.endUser)}\n` : `end user ${JSON.stringify(b.endUser)}\n`;
  const cap = b.budgetMicros == null ? 'no budget' : `${dollars(b.budgetMicros)} a ${b.period}`;
  process.stdout.write(head
    + `  budget     ${cap}${b.rpm == null ? '' : `, ${b.rpm} requests a minute`}\n`
    + `  used       ${dollars(b.usedMicros)} since ${b.periodStart} (${dollars(b.heldMicros)} held)\n`
    + (b.remainingMicros == null ? '' : `  remaining  ${dollars(b.remainingMicros)}\n`));
}

async function set(argv: string[]): Promise<number> {
  const { values: flags, positionals } = parseArgs(argv, {
    options: { budget: { type: 'string' }, 'budget-usd': { type: 'string' }, period: { type: 'string' }, rpm: { type: 'string' }, json: { type: 'boolean' } },
    positionals: { min: 1, max: 1, names: 'ID' },
  });
  if ((flags.budget === undefined) === (flags['budget-usd'] === undefined)) throw new UsageError('give one of --budget MICROS and --budget-usd X');
  const micros = flags.budget !== undefined ? Number(microsFlag(flags.budget, 'budget', false)) : usdFlag(flags['budget-usd'])!;
  if (!Number.isSafeInteger(micros)) throw new UsageError('the budget is too large');
  const period = oneOf(flags.period, 'period', PERIODS);
  if (!period) throw new UsageError('--period day|month is required');
  const rpm = intFlag(flags.rpm, 'rpm', 1, 1_000_000) ?? null;
  print(flags, 'set', await clientFromEnv().endUsers.set(positionals[0]!, { budgetMicros: micros, period, rpm }));
  return EXIT.ok;
}

async function get(argv: string[]): Promise<number> {
  const { values: flags, positionals } = parseArgs(argv, { options: { json: { type: 'boolean' } }, positionals: { min: 1, max: 1, names: 'ID' } });
  print(flags, null, await clientFromEnv().endUsers.get(positionals[0]!));
  return EXIT.ok;
}

async function remove(argv: string[]): Promise<number> {
  const { values: flags, positionals } = parseArgs(argv, { options: { json: { type: 'boolean' } }, positionals: { min: 1, max: 1, names: 'ID' } });
  await clientFromEnv().endUsers.remove(positionals[0]!);
  if (interactive(flags.json)) process.stdout.write(`${green('✔')} removed the budget of end user ${JSON.stringify(positionals[0])}\n${dim('Its requests are bound by the account\'s and the key\'s budgets alone.')}\n`);
  else jsonLine(process.stdout, { event: 'removed', endUser: positionals[0] });
  return EXIT.ok;
}
