// `kiln transform`, `kiln models` and `kiln me`: one request each, printed for a person on a
// terminal and as JSON lines elsewhere.

import type { ImageTransformRequest } from '../../client/index.ts';
import { intFlag, oneOf, parseArgs, UsageError } from '../args.ts';
import { clientFromEnv, EXIT } from './exit.ts';
import { download, imageExtension, targetPath, writeAtomically } from './files.ts';
import { dim, dollars, interactive, jsonLine } from './live.ts';

export const TRANSFORM_HELP = 'SOURCE --op convert|compress|trim [--format png|jpeg|webp|avif] [--quality Q] [--target-bytes N] [--max-dimension N] [--out FILE] [--json]';
export const MODELS_HELP = '[--json] — the models this key can use, with their billed prices';
export const ME_HELP = "[--json] — who the key is (account id, email, scopes) and its account: tier, budget, usage this period";

const FORMATS = ['png', 'jpeg', 'webp', 'avif'] as const;

export async function transform(argv: string[]): Promise<number> {
  const { values: flags, positionals: args } = parseArgs(argv, {
    options: {
      op: { type: 'string' }, format: { type: 'string' }, quality: { type: 'string' }, 'target-bytes': { type: 'string' },
      'max-dimension': { type: 'string' }, out: { type: 'string' }, json: { type: 'boolean' },
    },
    positionals: { min: 1, max: 1, names: 'SOURCE (a store path or URL of an image of yours, or seed/…)' },
  });
  const op = oneOf(flags.op, 'op', ['convert', 'compress', 'trim'] as const);
  if (!op) throw new UsageError('--op is required (convert, compress or trim)');
  let quality: number | undefined;
  if (flags.quality !== undefined) {
    quality = Number(flags.quality);
    if (!/^\d*\.?\d+$/.test(flags.quality) || !(quality > 0 && quality <= 1)) throw new UsageError('--quality must be a number in (0, 1]');
  }
  const options: NonNullable<ImageTransformRequest['options']> = {
    ...(flags.format && { format: oneOf(flags.format, 'format', FORMATS) }),
    ...(quality !== undefined && { quality }),
    ...(flags['target-bytes'] && { targetBytes: intFlag(flags['target-bytes'], 'target-bytes', 1, 1e12) }),
    ...(flags['max-dimension'] && { maxDimension: intFlag(flags['max-dimension'], 'max-dimension', 1, 8192) }),
  };
  const client = clientFromEnv();
  const result = await client.transforms.create({ source: args[0]!, op, ...(Object.keys(options).length && { options }) });
  let file: string | null = null;
  if (flags.out !== undefined && result.url) {
    const name = (result.path?.split('/').pop() ?? 'transformed').replace(/\.[^.]+$/, '') + `.${imageExtension(null, result.format)}`;
    file = await writeAtomically(await targetPath(flags.out, name), await download(result.url));
  }
  if (interactive(flags.json)) {
    if (!result.url) process.stdout.write(`nothing to trim: no uniform edges found (nothing stored)\n`);
    else {
      const size = `${result.width}×${result.height} ${result.format}, ${result.bytes} bytes${result.withinTarget === false ? ' (over the target: the smallest encode)' : ''}`;
      process.stdout.write(`${size}\n${result.url}\n${file ? `${file}\n` : ''}`);
    }
  } else {
    jsonLine(process.stdout, { event: 'result', ...result, file });
  }
  return EXIT.ok;
}

export async function models(argv: string[]): Promise<number> {
  const { values: flags } = parseArgs(argv, { options: { json: { type: 'boolean' } } });
  const { data } = await clientFromEnv().models.list();
  if (!interactive(flags.json)) {
    for (const m of data) jsonLine(process.stdout, m);
    return EXIT.ok;
  }
  const width = Math.max(...data.map((m) => m.id.length), 2);
  for (const m of data) {
    // Prices are microdollars, per-token ones often fractions of one: shown as they are.
    const price = m.pricing
      ? Object.entries(m.pricing).map(([k, v]) => `${k.replace(/_?micros_per_/, ' per ').trim()} ${v} µ$`).join(', ')
      : 'price unknown';
    process.stdout.write(`${m.id.padEnd(width)}  ${m.category.padEnd(5)}  ${m.name}  ${dim(price)}\n`);
  }
  return EXIT.ok;
}

export async function me(argv: string[]): Promise<number> {
  const { values: flags } = parseArgs(argv, { options: { json: { type: 'boolean' } } });
  const client = clientFromEnv();
  const [u, who] = await Promise.all([client.usage.get(), client.me()]);
  if (!interactive(flags.json)) {
    // GET /usage's body, and who the credential is (GET /me) under `account`.
    jsonLine(process.stdout, { ...u, account: who });
    return EXIT.ok;
  }
  process.stdout.write(`account ${who.accountId} · ${who.email}${who.admin ? ' · admin' : ''} · scopes ${who.scopes.join(',')}\n`);
  const budget = (used: number | null, total: number | null, remaining: number | null, resets: string | null) =>
    `used ${dollars(used)} of ${total == null ? 'unlimited' : dollars(total)}${remaining == null ? '' : ` · ${dollars(remaining)} left`}${resets ? dim(` · resets ${resets}`) : ''}`;
  process.stdout.write(`tier ${u.tier} · ${u.scope} budget\n`);
  process.stdout.write(`personal   ${budget(u.used_micros, u.token_budget_micros, u.remaining_micros, u.resets_at)}\n`);
  if (u.workspace_id) {
    process.stdout.write(`workspace  ${u.workspace_id}: ${budget(u.workspace_used_micros, u.workspace_budget_micros, u.workspace_remaining_micros, u.workspace_resets_at)}\n`);
  }
  return EXIT.ok;
}
