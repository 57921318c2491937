// `kiln ls` (the key's generations, newest first) and `kiln usage` (the budget, or with --daily the
// spend per day and model): a table on a terminal, JSON lines elsewhere.

import type { DailyUsageGroup, DailyUsageQuery, Generation, GenerationListQuery } from '../../client/index.ts';
import { intFlag, parseArgs, UsageError } from '../args.ts';
import { clientFromEnv, EXIT } from './exit.ts';
import { me } from './info.ts';
import { dim, dollars, interactive, jsonLine, red } from './live.ts';

export const LS_HELP =
  '[--status S[,S…]] [--type image|code] [--model ID] [--since TIME] [--limit N] [--all] [--cursor C] [--json] — your generations, newest first (on a terminal: id, status, cost, prompt, model or error)';
export const USAGE_HELP = '[--daily [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--by endUser|metadata.KEY]] [--json] — the budget this period, or with --daily the spend per day and model (with --by: per day and end user, or per day and value of a metadata key)';

const STATUSES = ['pending', 'processing', 'completed', 'failed'];

export async function ls(argv: string[]): Promise<number> {
  const { values: flags } = parseArgs(argv, {
    options: {
      status: { type: 'string' }, type: { type: 'string' }, model: { type: 'string' }, since: { type: 'string' },
      limit: { type: 'string' }, all: { type: 'boolean' }, cursor: { type: 'string' }, json: { type: 'boolean' },
    },
  });
  // The server checks every value too (400s name the parameter); these catch typos before a request.
  if (flags.status && !flags.status.split(',').every((s) => STATUSES.includes(s))) throw new UsageError(`--status must be ${STATUSES.join(', ')} (several separated by commas)`);
  if (flags.type && flags.type !== 'image' && flags.type !== 'code') throw new UsageError('--type must be image or code');
  if (flags.all && flags.cursor) throw new UsageError('--all starts from the newest: leave out --cursor');
  const query: GenerationListQuery = {
    limit: intFlag(flags.limit, 'limit', 1, 100) ?? 20,
    ...(flags.status && { status: flags.status }),
    ...(flags.type && { type: flags.type }),
    ...(flags.model && { model: flags.model }),
    ...(flags.since && { since: flags.since }),
    ...(flags.cursor && { cursor: flags.cursor }),
  };
  const client = clientFromEnv();
  const table = interactive(flags.json);
  let cursor: string | null = null;
  let shown = 0;
  do {
    const page = await client.generations.list({ ...query, ...(cursor ? { cursor } : {}) });
    for (const g of page.data) {
      if (table) process.stdout.write(row(g));
      else jsonLine(process.stdout, g);
    }
    shown += page.data.length;
    cursor = page.nextCursor;
  } while (flags.all && cursor);
  if (table) {
    if (!shown) process.stdout.write(dim('no generations\n'));
    if (cursor) process.stdout.write(dim(`more: kiln ls --cursor ${cursor}${flags.all ? '' : ' (or --all)'}\n`));
  } else if (cursor) {
    jsonLine(process.stdout, { nextCursor: cursor });
  }
  return EXIT.ok;
}

/** What was asked, on one line (control characters as spaces), cut to `width` characters (with an ellipsis) and padded to it. */
function promptCell(prompt: string | undefined, width: number): string {
  const chars = [...(prompt ?? '').replace(/[\p{Cc}\s]+/gu, ' ').trim()];
  const cut = chars.length > width ? [...chars.slice(0, width - 1), '…'] : chars;
  return cut.join('') + ' '.repeat(width - cut.length);
}

function row(g: Generation): string {
  const status = g.status === 'failed' ? red(g.status.padEnd(10)) : g.status.padEnd(10);
  const r = g.result;
  const cost = r ? dollars(r.costMicros).padStart(10) : ''.padStart(10);
  // The prompt gets what the terminal leaves beside the id, status, cost and about 20 columns for the model.
  const columns = process.stdout.columns || Number(process.env.COLUMNS) || 80;
  const prompt = promptCell(g.prompt, Math.max(16, Math.min(60, columns - 64 - 22)));
  const what = r ? `${r.type} ${r.model ?? ''}`.trim() : g.error ? dim(g.error.slice(0, 60)) : '';
  return `${g.id}  ${status}  ${cost}  ${prompt}  ${what}\n`.replace(/ +\n$/, '\n');
}

export async function usage(argv: string[]): Promise<number> {
  const { values: flags } = parseArgs(argv, {
    options: { daily: { type: 'boolean' }, from: { type: 'string' }, to: { type: 'string' }, by: { type: 'string' }, json: { type: 'boolean' } },
  });
  if (!flags.daily) {
    if (flags.from || flags.to || flags.by) throw new UsageError('--from, --to and --by go with --daily');
    return me(flags.json ? ['--json'] : []);
  }
  const query: DailyUsageQuery = { ...(flags.from && { from: flags.from }), ...(flags.to && { to: flags.to }) };
  if (flags.by !== undefined) return usageBy(query, flags.by, flags.json);
  const d = await clientFromEnv().usage.daily(query);
  if (!interactive(flags.json)) {
    jsonLine(process.stdout, d);
    return EXIT.ok;
  }
  process.stdout.write(`${d.scope} budget${d.workspace_id ? ` (workspace ${d.workspace_id})` : ''} · ${d.from} to ${d.to} (UTC days)\n`);
  if (!d.days.length) {
    process.stdout.write(dim('no charges\n'));
    return EXIT.ok;
  }
  const width = Math.max(...d.days.map((x) => x.model_id.length), 5);
  process.stdout.write(dim(`${'day'.padEnd(10)}  ${'model'.padEnd(width)}  ${'spend'.padStart(14)}  ${'charges'.padStart(7)}  in flight\n`));
  let total = 0;
  for (const x of d.days) {
    total += x.spend_micros;
    const held = x.held_micros ? dim(dollars(x.held_micros)) : '';
    process.stdout.write(`${x.day}  ${x.model_id.padEnd(width)}  ${dollars(x.spend_micros).padStart(14)}  ${String(x.charges).padStart(7)}  ${held}\n`);
  }
  process.stdout.write(`${'total'.padEnd(10)}  ${''.padEnd(width)}  ${dollars(total).padStart(14)}\n`);
  return EXIT.ok;
}

/** `kiln usage --daily --by endUser|metadata.KEY`: every group of every day (docs/usage.md, "Usage by end user and by metadata"). */
async function usageBy(query: DailyUsageQuery, by: string, json: boolean | undefined): Promise<number> {
  if (!/^(?:endUser|metadata\.[A-Za-z0-9_.:-]{1,64})$/.test(by)) throw new UsageError('--by must be endUser or metadata.KEY (a metadata key: 1 to 64 characters of A-Z, a-z, 0-9, _ . : -)');
  const client = clientFromEnv();
  const table = interactive(json);
  const groups: DailyUsageGroup[] = [];
  for await (const g of client.usage.groups({ ...query, groupBy: by, limit: 1000 })) {
    if (table) groups.push(g);
    else jsonLine(process.stdout, g);
  }
  if (!table) return EXIT.ok;
  const none = by === 'endUser' ? '(no end user)' : `(no ${by.slice('metadata.'.length)})`;
  process.stdout.write(`spend per UTC day and ${by === 'endUser' ? 'end user' : by}\n`);
  if (!groups.length) {
    process.stdout.write(dim('no charges\n'));
    return EXIT.ok;
  }
  const label = (g: DailyUsageGroup) => g.group ?? none;
  const width = Math.min(48, Math.max(...groups.map((g) => [...label(g)].length), 5));
  const cell = (s: string) => {
    const chars = [...s.replace(/[\p{Cc}\s]+/gu, ' ')];
    return (chars.length > width ? [...chars.slice(0, width - 1), '…'] : chars).join('').padEnd(width);
  };
  process.stdout.write(dim(`${'day'.padEnd(10)}  ${'group'.padEnd(width)}  ${'spend'.padStart(14)}  ${'charges'.padStart(7)}  in flight\n`));
  let total = 0;
  for (const g of groups) {
    total += g.spend_micros;
    const held = g.held_micros ? dim(dollars(g.held_micros)) : '';
    const name = g.group === null ? dim(cell(none)) : cell(g.group);
    process.stdout.write(`${g.day}  ${name}  ${dollars(g.spend_micros).padStart(14)}  ${String(g.charges).padStart(7)}  ${held}\n`);
  }
  process.stdout.write(`${'total'.padEnd(10)}  ${''.padEnd(width)}  ${dollars(total).padStart(14)}\n`);
  return EXIT.ok;
}
