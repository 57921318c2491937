// `kiln batch create FILE [--watch] | ls | get ID [--watch] | results ID [-o FILE] | cancel ID`: batches of
// generations from a JSON Lines file (docs/api.md, "User commands"). A refused file prints every
// problem with its pointer (`/lines/17/body/model`), one per line. --watch follows the batch to
// its end: a progress bar redrawn in place on a terminal, JSON lines elsewhere. Ctrl-C stops
// watching and leaves the batch running (`kiln batch cancel ID` cancels it).

import { once } from 'node:events';
import fs from 'node:fs';
import type { Batch, KilnClient } from '../../client/index.ts';
import { intFlag, parseArgs, UsageError } from '../args.ts';
import { clientFromEnv, describe, EXIT, exitCodeOf, interruptible } from './exit.ts';
import { targetPath, writeLinesAtomically } from './files.ts';
import { dim, dollars, elapsed, green, interactive, jsonLine, LiveBlock, red } from './live.ts';

export const BATCH_HELP =
  'create FILE [--watch] [--idempotency-key K] | ls [--limit N] [--cursor C] | get ID [--watch] | results ID [-o FILE] | cancel ID [--json]'
  + ' — batches of generations from a JSON Lines file (FILE - reads stdin); --watch follows one to its end (Ctrl-C stops watching, not the batch), results streams its JSONL';

const ENDED = new Set(['completed', 'canceled', 'expired']);

export async function batch(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'create': return create(rest);
    case 'ls': return ls(rest);
    case 'get': return get(rest);
    case 'results': return results(rest);
    case 'cancel': return cancel(rest);
    default: throw new UsageError(sub === undefined ? 'missing a subcommand: create, ls, get, results or cancel' : `unknown subcommand ${JSON.stringify(sub)} (create, ls, get, results, cancel)`);
  }
}

/** FILE's bytes, or stdin's for `-`. */
async function readInput(file: string): Promise<Uint8Array> {
  if (file === '-') {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }
  try {
    return await fs.promises.readFile(file);
  } catch (e) {
    throw new UsageError(`cannot read ${file}: ${(e as Error).message}`);
  }
}

const ended = (b: Batch) => b.requestCounts.completed + b.requestCounts.failed + b.requestCounts.canceled;

/** `[██████░░░░░░]` for the share of lines ended. */
function bar(b: Batch, width = 24): string {
  const total = b.requestCounts.total;
  const filled = total ? Math.min(width, Math.floor((ended(b) / total) * width)) : 0;
  return `[${'█'.repeat(filled)}${'░'.repeat(width - filled)}]`;
}

/** The counts in words: `298 completed, 2 failed` (zeros left out, except an all-zero batch). */
function counts(b: Batch): string {
  const c = b.requestCounts;
  const parts = [['completed', c.completed], ['failed', c.failed], ['canceled', c.canceled]].filter(([, n]) => n).map(([w, n]) => `${n} ${w}`);
  return parts.join(', ') || 'none ended';
}

function summary(b: Batch): string {
  return `batch ${b.id} ${b.status} · ${ended(b)}/${b.requestCounts.total} lines ended (${counts(b)}) · spent ${dollars(b.spentMicros)}`;
}

async function create(argv: string[]): Promise<number> {
  const { values: flags, positionals } = parseArgs(argv, {
    options: { watch: { type: 'boolean' }, 'idempotency-key': { type: 'string' }, json: { type: 'boolean' } },
    positionals: { min: 1, max: 1, names: 'FILE (JSON Lines, or - for stdin)' },
  });
  const body = await readInput(positionals[0]!);
  const client = clientFromEnv();
  const tty = interactive(flags.json);
  const created = await client.batches.create(body, flags['idempotency-key'] === undefined ? {} : { idempotencyKey: flags['idempotency-key'] });
  if (!flags.watch) {
    if (tty) {
      process.stdout.write(`${green('✔')} batch ${created.id} ${created.status} · ${created.requestCounts.total} lines · expires ${created.expiresAt}\n`);
      process.stdout.write(dim(`follow it: kiln batch get ${created.id} · results: kiln batch results ${created.id} -o results.jsonl\n`));
    } else jsonLine(process.stdout, { event: 'created', ...created });
    return EXIT.ok;
  }
  return watch(client, created, tty, 'created');
}

/**
 * Follows a batch to its end. Exit code 0 when it completed (whatever each line's outcome: see
 * `requestCounts.failed`), 5 when it ended canceled or expired, 130 on Ctrl-C (the batch goes on).
 */
async function watch(client: KilnClient, created: Batch, tty: boolean, first: 'created' | null): Promise<number> {
  const started = Date.now();
  const at = () => ({ elapsed_ms: Date.now() - started });
  let current = created;
  let final: string | null = null;
  // Two lines while it runs (the id, then the bar: each fits 80 columns), one when it has ended.
  const block = tty
    ? new LiveBlock(process.stdout, (spin) => {
      if (final) return [final];
      const c = current.requestCounts;
      return [
        `batch ${current.id} · ${c.total} line${c.total === 1 ? '' : 's'}`,
        `${spin} ${current.status.padEnd(11)} ${bar(current)} ${ended(current)}/${c.total}${c.failed ? ` · ${c.failed} failed` : ''}` +
          `${c.canceled ? ` · ${c.canceled} canceled` : ''}  ${elapsed(Date.now() - started)}`,
      ];
    })
    : null;
  if (!tty && first) jsonLine(process.stdout, { event: first, ...created, ...at() });
  const stop = interruptible();
  try {
    stop.signal.throwIfAborted();
    for await (const e of client.batches.watch(created.id, { signal: stop.signal })) {
      current = e.data;
      if (block) block.draw();
      else jsonLine(process.stdout, { event: e.terminal ? 'result' : 'progress', ...e.data, ...at() });
    }
  } catch (e) {
    if (stop.signal.aborted) {
      // Watching stops; the batch does not (it is meant to run unattended).
      const hint = `stopped watching; the batch goes on (kiln batch get ${created.id}, kiln batch cancel ${created.id})`;
      if (block) {
        final = `${dim('■')} ${summary(current)} · ${hint}`;
        block.close();
      } else {
        jsonLine(process.stdout, { event: 'detached', ...current, ...at() });
        process.stderr.write(`kiln batch: ${hint}\n`);
      }
      return EXIT.interrupted;
    }
    // On a terminal the block's last line says what failed; elsewhere stderr does (runUserCommand).
    if (!block) throw e;
    final = `${red('✖')} ${describe(e)}`;
    block.close();
    return exitCodeOf(e);
  } finally {
    stop.dispose();
  }
  const ok = current.status === 'completed';
  if (block) {
    final = `${ok ? green('✔') : red('✖')} batch ${current.id} ${current.status} in ${elapsed(Date.now() - started)} · ` +
      `${current.requestCounts.total} lines: ${counts(current)} · spent ${dollars(current.spentMicros)}`;
    block.close();
    process.stdout.write(dim(`results: kiln batch results ${current.id} -o results.jsonl\n`));
  }
  return ok ? EXIT.ok : EXIT.failed;
}

async function ls(argv: string[]): Promise<number> {
  const { values: flags } = parseArgs(argv, { options: { limit: { type: 'string' }, cursor: { type: 'string' }, json: { type: 'boolean' } } });
  const limit = intFlag(flags.limit, 'limit', 1, 100) ?? 20;
  const page = await clientFromEnv().batches.list({ limit, ...(flags.cursor && { cursor: flags.cursor }) });
  if (!interactive(flags.json)) {
    for (const b of page.data) jsonLine(process.stdout, b);
    if (page.nextCursor) jsonLine(process.stdout, { nextCursor: page.nextCursor });
    return EXIT.ok;
  }
  if (!page.data.length) process.stdout.write(dim('no batches\n'));
  for (const b of page.data) {
    const status = b.status === 'completed' ? b.status.padEnd(11) : ENDED.has(b.status) ? red(b.status.padEnd(11)) : b.status.padEnd(11);
    const progress = `${ended(b)}/${b.requestCounts.total}`.padStart(13);
    const failed = b.requestCounts.failed ? red(`${b.requestCounts.failed} failed`) : '';
    process.stdout.write(`${b.id}  ${status}  ${bar(b, 12)} ${progress}  ${dollars(b.spentMicros).padStart(10)}  ${dim(b.createdAt)}  ${failed}`.trimEnd() + '\n');
  }
  if (page.nextCursor) process.stdout.write(dim(`more: kiln batch ls --cursor ${page.nextCursor}\n`));
  return EXIT.ok;
}

async function get(argv: string[]): Promise<number> {
  const { values: flags, positionals } = parseArgs(argv, { options: { watch: { type: 'boolean' }, json: { type: 'boolean' } }, positionals: { min: 1, max: 1, names: 'ID' } });
  const client = clientFromEnv();
  const b = await client.batches.get(positionals[0]!);
  if (flags.watch) return watch(client, b, interactive(flags.json), null);
  // The batch as JSON either way: indented for a person, one line elsewhere.
  if (interactive(flags.json)) process.stdout.write(`${JSON.stringify(b, null, 2)}\n`);
  else jsonLine(process.stdout, b);
  return EXIT.ok;
}

async function cancel(argv: string[]): Promise<number> {
  const { values: flags, positionals } = parseArgs(argv, { options: { json: { type: 'boolean' } }, positionals: { min: 1, max: 1, names: 'ID' } });
  const b = await clientFromEnv().batches.cancel(positionals[0]!);
  if (interactive(flags.json)) {
    process.stdout.write(`${green('✔')} ${summary(b)}\n`);
    if (b.status === 'canceling') process.stdout.write(dim('lines in flight are being canceled: kiln batch get to see it end\n'));
  } else jsonLine(process.stdout, { event: 'canceled', ...b });
  return EXIT.ok;
}

/**
 * The results as JSON Lines, streamed as they arrive: to stdout, or with -o to FILE (a directory:
 * `<id>.jsonl` inside it), written under a temporary name and renamed once complete.
 */
async function results(argv: string[]): Promise<number> {
  const { values: flags, positionals } = parseArgs(argv, {
    options: { out: { type: 'string', short: 'o' }, json: { type: 'boolean' } },
    positionals: { min: 1, max: 1, names: 'ID' },
  });
  const id = positionals[0]!;
  const client = clientFromEnv();
  const tally = { lines: 0, completed: 0, failed: 0 };
  async function* text(signal?: AbortSignal): AsyncGenerator<string> {
    for await (const r of client.batches.results(id, { signal })) {
      tally.lines++;
      if (r.error) tally.failed++;
      else tally.completed++;
      yield `${JSON.stringify(r)}\n`;
    }
  }
  if (flags.out === undefined) {
    // stdout is the JSONL and nothing else. A reader that goes away (`| head`) ends it quietly.
    const gone = new AbortController();
    const onError = (e: NodeJS.ErrnoException) => gone.abort(e);
    process.stdout.on('error', onError);
    try {
      for await (const chunk of text(gone.signal)) {
        if (!process.stdout.write(chunk)) await once(process.stdout, 'drain', { signal: gone.signal });
      }
    } catch (e) {
      if ((gone.signal.reason as NodeJS.ErrnoException | undefined)?.code === 'EPIPE') return EXIT.ok;
      throw e;
    } finally {
      process.stdout.off('error', onError);
    }
    return EXIT.ok;
  }
  // Ctrl-C stops the download and leaves no partial file.
  const stop = interruptible();
  let file: string;
  try {
    file = await writeLinesAtomically(await targetPath(flags.out, `${id}.jsonl`), text(stop.signal));
  } catch (e) {
    if (stop.signal.aborted) return EXIT.interrupted;
    throw e;
  } finally {
    stop.dispose();
  }
  if (interactive(flags.json)) process.stdout.write(`${green('✔')} ${tally.lines} lines (${tally.completed} completed, ${tally.failed} not) → ${file}\n`);
  else jsonLine(process.stdout, { event: 'saved', id, file, ...tally });
  return EXIT.ok;
}
