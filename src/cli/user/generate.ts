// `kiln generate image|code`: creates the generation, follows its events, writes the image or
// code to a file. Code is also written to stdout as it arrives on a terminal or with `--stream`
// (docs/api.md, "User commands"). Ctrl-C cancels the job on the server before exiting.

import type { Generation, GenerationAccepted, GenerationRequest, KilnClient, TextUpdate } from '../../client/index.ts';
import { oneOf, parseArgs, UsageError } from '../args.ts';
import { clientFromEnv, describe, EXIT, exitCodeOf, interruptible } from './exit.ts';
import { codeExtension, download, imageExtension, targetPath, writeAtomically } from './files.ts';
import { dim, dollars, elapsed, green, interactive, jsonLine, LiveBlock, red } from './live.ts';

export const GENERATE_HELP = 'image|code --prompt TEXT [--model ID] [--aspect R] [--lang L] [--screen] [--image URL]… [--out FILE] [--stream|--no-stream] [--json]' +
  ' — code is written to stdout as it arrives on a terminal or with --stream (--no-stream: only the file)';

const ASPECTS = ['1:1', '16:9', '9:16', '4:3', '3:4', '3:2', '2:3'] as const;
const LANGS = ['text', 'tsx', 'jsx', 'css', 'svg', 'json', 'typescript', 'javascript', 'mdx', 'markdown', 'glsl'] as const;

type State = Generation | GenerationAccepted;
interface Outcome {
  status: string;
  error: string | null;
  costMicros: number | null;
  file: string | null;
  url: string | null;
  canceled: boolean;
  /** The completed code (what the file holds). */
  code?: string;
}

export async function generate(argv: string[]): Promise<number> {
  const { values: flags, positionals: args } = parseArgs(argv, {
    options: {
      prompt: { type: 'string' }, model: { type: 'string' }, aspect: { type: 'string' }, lang: { type: 'string' },
      screen: { type: 'boolean' }, image: { type: 'string', multiple: true }, out: { type: 'string' }, json: { type: 'boolean' },
      stream: { type: 'boolean' }, 'no-stream': { type: 'boolean' },
    },
    positionals: { min: 1, max: 1, names: 'what to generate: image or code' },
  });
  const type = args[0];
  if (type !== 'image' && type !== 'code') throw new UsageError(`generate image or code, not ${JSON.stringify(type)}`);
  if (!flags.prompt) throw new UsageError('--prompt is required');
  if (type === 'image' && (flags.lang || flags.screen)) throw new UsageError('--lang and --screen are for code');
  if (type === 'code' && flags.aspect) throw new UsageError('--aspect is for images');
  if (flags.stream && flags['no-stream']) throw new UsageError('--stream and --no-stream contradict each other');
  if (type === 'image' && flags.stream) throw new UsageError('--stream is for code');
  if (flags.stream && flags.json) throw new UsageError('--stream writes the code to stdout and --json writes JSON lines there: choose one');
  // On a terminal, code streams unless told not to; elsewhere only when asked.
  const streaming = type === 'code' && !flags.json && (flags.stream ?? (!flags['no-stream'] && process.stdout.isTTY === true));
  const body: GenerationRequest = {
    type,
    prompt: flags.prompt,
    ...(flags.model && { model: flags.model }),
    ...(flags.aspect && { aspectRatio: oneOf(flags.aspect, 'aspect', ASPECTS) }),
    ...(flags.lang && { targetLanguage: oneOf(flags.lang, 'lang', LANGS) }),
    ...(flags.screen && { screenHtml: true }),
    ...(flags.image?.length && { images: flags.image.map((url) => ({ url })) }),
  };
  const client = clientFromEnv();
  const view = streaming ? streamView(type, flags.model) : interactive(flags.json) ? ttyView(type, flags.model) : jsonView();
  const stop = interruptible();
  try {
    const outcome = await follow(client, body, stop.signal, view, { out: flags.out, lang: flags.lang, screen: flags.screen });
    view.done(outcome);
    if (outcome.canceled) return EXIT.interrupted;
    return outcome.status === 'completed' ? EXIT.ok : EXIT.failed;
  } catch (e) {
    view.fail(e);
    return exitCodeOf(e);
  } finally {
    stop.dispose();
  }
}

async function follow(client: KilnClient, body: GenerationRequest, signal: AbortSignal, view: View, opts: { out?: string; lang?: string; screen?: boolean }): Promise<Outcome> {
  // Not aborted by Ctrl-C: once the POST is sent the job may exist, and only its id lets us cancel it.
  const accepted = await client.generations.create(body);
  view.status(accepted);
  let final: Generation | null = null;
  try {
    signal.throwIfAborted();
    if (view.text) {
      const text = client.generations.streamText(accepted.id, { signal });
      for (let r = await text.next(); ; r = await text.next()) {
        if (r.done) {
          final = r.value;
          break;
        }
        view.text(r.value);
      }
    } else {
      for await (const e of client.generations.watch(accepted.id, { signal })) {
        view.status(e.data);
        if (e.terminal) final = e.data;
      }
    }
    if (!final) throw new Error('the event stream ended without a settled state');
    if (final.status !== 'completed' || !final.result) {
      return { status: final.status, error: final.error, costMicros: 0, file: null, url: null, canceled: false };
    }
    const r = final.result;
    if (r.type === 'image') {
      if (!r.url) throw new Error('the completed image has no URL');
      const file = await targetPath(opts.out, `${final.id}.${imageExtension(r.mediaType)}`);
      const written = await writeAtomically(file, await download(r.url, signal));
      return { status: 'completed', error: null, costMicros: r.costMicros, file: written, url: r.url, canceled: false };
    }
    const code = r.code ?? '';
    const file = await targetPath(opts.out, `${final.id}.${codeExtension(code, opts)}`);
    const written = await writeAtomically(file, code);
    return { status: 'completed', error: null, costMicros: r.costMicros, file: written, url: null, canceled: false, code };
  } catch (e) {
    if (!signal.aborted) throw e;
    return cancel(client, accepted.id);
  }
}

/** Ctrl-C: cancel on the server (bounded), then report the state it left. */
async function cancel(client: KilnClient, id: string): Promise<Outcome> {
  const bounded = { signal: AbortSignal.timeout(15_000) };
  let state: Generation;
  try {
    state = await client.generations.cancel(id, bounded);
  } catch (e) {
    // 409: it settled first (then it stays as it is); anything else is reported as is.
    if ((e as { status?: number }).status !== 409) throw e;
    state = await client.generations.get(id, bounded);
  }
  const cost = state.status === 'completed' ? state.result?.costMicros ?? null : 0;
  return { status: state.status, error: state.error, costMicros: cost, file: null, url: null, canceled: true };
}

interface View {
  status(state: State): void;
  /** Set by a view that shows the code as it is written: it is then given the text, not statuses. */
  text?(update: TextUpdate): void;
  done(outcome: Outcome): void;
  fail(error: unknown): void;
}

function jsonView(): View {
  const started = Date.now();
  let id = '';
  let seen = '';
  return {
    status(s) {
      id = s.id;
      if (s.status === seen) return;
      seen = s.status;
      jsonLine(process.stdout, { event: 'status', id: s.id, status: s.status, elapsed_ms: Date.now() - started });
    },
    done(o) {
      jsonLine(process.stdout, {
        event: 'result', id, status: o.status, error: o.error, cost_micros: o.costMicros, file: o.file,
        ...(o.url && { url: o.url }), ...(o.canceled && { canceled: true }), elapsed_ms: Date.now() - started,
      });
    },
    fail(e) {
      const k = e as { type?: string; status?: number; requestId?: string | null };
      jsonLine(process.stdout, { event: 'error', ...(id && { id }), type: k.type ?? 'error', status: k.status ?? null, message: describe(e), request_id: k.requestId ?? null });
      process.stderr.write(`kiln generate: ${describe(e)}\n`);
    },
  };
}

function ttyView(type: string, model: string | undefined): View {
  const started = Date.now();
  let state: State | null = null;
  let last: string[] | null = null;
  const what = dim(`${type}${model ? ` · ${model}` : ''}`);
  const block = new LiveBlock(process.stdout, (spin) => last ?? [`${spin} ${(state?.status ?? 'sending').padEnd(10)} ${elapsed(Date.now() - started).padStart(6)}  ${what}${state ? dim(`  ${state.id}`) : ''}`]);
  return {
    status(s) {
      state = s;
      block.draw();
    },
    done(o) {
      const took = elapsed(Date.now() - started);
      const cost = o.status === 'completed' ? `cost ${dollars(o.costMicros)}` : 'nothing charged';
      last = o.status === 'completed'
        ? [`${green('✔')} completed in ${took} · ${cost}`, o.file ?? '']
        : [`${red('✖')} ${o.canceled ? 'canceled' : o.status} in ${took} · ${cost}${o.error && !o.canceled ? ` · ${o.error}` : ''}`];
      block.close();
    },
    fail(e) {
      last = [`${red('✖')} ${describe(e)}`];
      block.close();
    },
  };
}

/**
 * `--stream` (the default for code on a terminal): stdout gets the code as it is written and
 * nothing else, so `kiln generate code --stream > x.tsx` is the code; what a person needs to know
 * goes to stderr — the generation's id, a reset, and the settled status, cost and file. The file
 * is written as without streaming. Nothing is printed twice: the result goes to stdout only when
 * nothing was streamed, or when it is not a part of the streamed text (then after a note saying
 * so); when it is the streamed text less the code fences (or prose) the model wrote around it,
 * which Kiln strips from the result, a note on stderr says so (docs/api.md, "User commands").
 */
function streamView(type: string, model: string | undefined): View {
  const started = Date.now();
  const onTty = process.stdout.isTTY === true;
  const errTty = process.stderr.isTTY === true;
  const paint = (f: (s: string) => string, s: string) => (errTty ? f(s) : s);
  let id = '';
  /** The text of the current execution, as written to stdout. */
  let shown = '';
  let streamed = false;
  /** Bytes written to stdout, and where the current execution's text began. */
  let bytes = 0;
  let from = 0;
  let lineOpen = false;
  const out = (s: string) => {
    process.stdout.write(s);
    bytes += Buffer.byteLength(s);
    if (s) lineOpen = !s.endsWith('\n');
  };
  // On a terminal, a note starts on a line of its own (stdout and stderr share the screen); in a
  // pipe stdout gets nothing but the code.
  const note = (line: string) => {
    if (onTty && lineOpen) out('\n');
    process.stderr.write(line + '\n');
  };
  return {
    status(s) {
      if (id) return;
      id = s.id;
      note(paint(dim, `${type}${model ? ` · ${model}` : ''} · ${s.id}`));
    },
    text(u) {
      if (u.reset) {
        const dropped = bytes - from;
        from = bytes;
        shown = '';
        note(onTty
          ? paint(dim, `↺ attempt ${u.attempt}: the generation started over — the text above is dropped`)
          : `kiln generate: the generation started over (attempt ${u.attempt}): stdout from byte ${bytes} on replaces the ${dropped} bytes before it`);
        return;
      }
      out(u.delta);
      shown = u.text;
      streamed = true;
    },
    done(o) {
      if (o.status === 'completed' && o.code !== undefined && o.code !== shown) {
        if (!shown) {
          // Nothing of this execution was streamed (it finished before the stream opened, or the model cannot stream).
          out(o.code);
        } else if (shown.includes(o.code)) {
          note(`kiln generate: the result is the streamed text without the ${[...shown].length - [...o.code].length} characters (code fences or prose) the model wrote around the code; ${o.file} holds the result`);
        } else {
          note(`kiln generate: the result differs from the streamed text; the result follows in full${onTty ? '' : ` (stdout from byte ${bytes} on)`}`);
          out(o.code);
        }
      }
      if (onTty && lineOpen) out('\n');
      const took = elapsed(Date.now() - started);
      const cost = o.status === 'completed' ? `cost ${dollars(o.costMicros)}` : 'nothing charged';
      const lines = o.status === 'completed'
        ? [`${paint(green, '✔')} completed in ${took} · ${cost}${streamed ? '' : ' · nothing was streamed'}`, o.file ?? '']
        : [`${paint(red, '✖')} ${o.canceled ? 'canceled' : o.status} in ${took} · ${cost}${o.error && !o.canceled ? ` · ${o.error}` : ''}`];
      for (const l of lines) if (l) note(l);
    },
    fail(e) {
      note(`kiln generate: ${describe(e)}`);
    },
  };
}
