// `kiln run WORKFLOW_ID [--watch]`: starts a run of a saved workflow; with --watch follows its
// events (one line per output: while it is written, its characters, progress and preview; then
// its result) to the results and their total cost. Ctrl-C while watching cancels the run on the
// server.

import type { KilnClient, RunStreamEvent, WorkflowRun, WorkflowRunResult } from '../../client/index.ts';
import { parseArgs } from '../args.ts';
import { clientFromEnv, describe, EXIT, exitCodeOf, interruptible } from './exit.ts';
import { dim, dollars, elapsed, green, interactive, jsonLine, LiveBlock, red } from './live.ts';

export const RUN_HELP = 'WORKFLOW_ID [--watch] [--json] — start a run of a saved workflow; --watch follows every output ' +
  '(characters written, progress, previews while it runs) to the results and the total cost';

/** An output in flight, from its stream events: what it has written so far. */
interface Flight {
  promptNodeId: string;
  outputNodeId: string;
  /** Characters (code points) written by the current execution. */
  chars: number;
  attempt: number;
  percent: number | null;
  message: string | null;
  previewUrl: string | null;
}

interface Watched {
  run: WorkflowRun | null;
  status: string;
  progress: { total: number; completed: number };
  outputs: WorkflowRunResult[];
  /** Outputs in flight, by output node id. */
  flight: Map<string, Flight>;
  /** Output node ids in the order they were first seen (in flight or settled): the lines' order. */
  order: string[];
}

export async function run(argv: string[]): Promise<number> {
  const { values: flags, positionals: args } = parseArgs(argv, {
    options: { watch: { type: 'boolean' }, json: { type: 'boolean' } },
    positionals: { min: 1, max: 1, names: 'WORKFLOW_ID' },
  });
  const workflowId = args[0]!;
  const client = clientFromEnv();
  const tty = interactive(flags.json);
  if (!flags.watch) {
    try {
      const started = await client.runs.start(workflowId);
      if (tty) process.stdout.write(`run ${started.id} ${started.status} (workflow ${workflowId})\n`);
      else jsonLine(process.stdout, { event: 'started', workflow_id: workflowId, run_id: started.id, status: started.status });
      return EXIT.ok;
    } catch (e) {
      process.stderr.write(`kiln run: ${describe(e)}\n`);
      return exitCodeOf(e);
    }
  }

  const view = tty ? ttyView() : jsonView();
  const stop = interruptible();
  let runId: string | null = null;
  try {
    const started = await client.runs.start(workflowId);
    runId = started.id;
    const w: Watched = { run: null, status: started.status, progress: { total: 0, completed: 0 }, outputs: [], flight: new Map(), order: [] };
    view.event(w, null, runId);
    try {
      stop.signal.throwIfAborted();
      for await (const e of client.runs.stream(workflowId, runId, { signal: stop.signal })) {
        apply(w, e);
        view.event(w, e, runId);
      }
    } catch (e) {
      if (!stop.signal.aborted) throw e;
      const canceled = await cancel(client, workflowId, runId);
      apply(w, { id: '', event: 'status', data: canceled, terminal: true });
      w.flight.clear();
      view.done(w, runId, true);
      return EXIT.interrupted;
    }
    view.done(w, runId, false);
    return w.status === 'completed' ? EXIT.ok : EXIT.failed;
  } catch (e) {
    view.fail(e, runId);
    return exitCodeOf(e);
  } finally {
    stop.dispose();
  }
}

const codePoints = (s: string) => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

function seen(w: Watched, outputNodeId: string): void {
  if (!w.order.includes(outputNodeId)) w.order.push(outputNodeId);
}

/** The output in flight an event names (started on its first event). */
function flightOf(w: Watched, d: { promptNodeId: string; outputNodeId: string }): Flight {
  let f = w.flight.get(d.outputNodeId);
  if (!f) {
    f = { promptNodeId: d.promptNodeId, outputNodeId: d.outputNodeId, chars: 0, attempt: 1, percent: null, message: null, previewUrl: null };
    w.flight.set(d.outputNodeId, f);
    seen(w, d.outputNodeId);
  }
  return f;
}

function apply(w: Watched, e: RunStreamEvent): void {
  switch (e.event) {
    case 'status':
      w.run = e.data;
      w.status = e.data.status;
      w.progress = e.data.progress;
      // The terminal body holds every settled output: it is the authority for the results.
      if (e.terminal) {
        w.outputs = e.data.results;
        for (const o of w.outputs) seen(w, o.outputNodeId);
        w.flight.clear();
      }
      break;
    case 'output':
      w.outputs.push(e.data);
      w.flight.delete(e.data.outputNodeId);
      seen(w, e.data.outputNodeId);
      break;
    case 'progress':
      w.progress = e.data;
      break;
    case 'output.progress':
      Object.assign(flightOf(w, e.data), { percent: e.data.percent, message: e.data.message });
      break;
    case 'delta':
      flightOf(w, e.data).chars = e.data.offset + codePoints(e.data.text);
      break;
    case 'preview':
      flightOf(w, e.data).previewUrl = e.data.url;
      break;
    case 'reset':
      // The output starts over: what it wrote is dropped.
      Object.assign(flightOf(w, e.data), { chars: 0, attempt: e.data.attempt, percent: null, message: null, previewUrl: null });
      break;
  }
}

/** The output node an event of an output in flight names (delta, preview, reset, its progress), else null. */
function inFlightNode(e: RunStreamEvent): string | null {
  if (e.event === 'delta' || e.event === 'preview' || e.event === 'reset') return e.data.outputNodeId;
  if (e.event === 'output.progress') return e.data.outputNodeId;
  return null;
}

/** An output in flight in a few words: attempt, characters, percent, latest message, preview URL. */
function flightDetail(f: Flight): string {
  return [
    f.attempt > 1 ? `attempt ${f.attempt}` : null,
    f.chars ? `${f.chars.toLocaleString('en-US')} chars` : f.previewUrl ? null : 'starting',
    f.percent !== null ? `${Math.round(f.percent)}%` : null,
    f.message,
    f.previewUrl ? `preview ${f.previewUrl}` : null,
  ].filter((x) => x !== null).join(' · ');
}

async function cancel(client: KilnClient, workflowId: string, runId: string): Promise<WorkflowRun> {
  const bounded = { signal: AbortSignal.timeout(15_000) };
  try {
    return await client.runs.cancel(workflowId, runId, bounded);
  } catch (e) {
    if ((e as { status?: number }).status !== 409) throw e;
    return client.runs.get(workflowId, runId, bounded);
  }
}

const totalCost = (outputs: WorkflowRunResult[]) => outputs.reduce((n, o) => n + (o.costMicros ?? 0), 0);

interface View {
  event(w: Watched, e: RunStreamEvent | null, runId: string): void;
  done(w: Watched, runId: string, canceled: boolean): void;
  fail(error: unknown, runId: string | null): void;
}

/** Without a terminal, an output in flight's characters alone are reported at most this often. */
const WRITING_LINE_MS = 1000;

function jsonView(): View {
  const started = Date.now();
  /** When each output in flight last had an `output_progress` line. */
  const lastLine = new Map<string, number>();
  return {
    event(w, e, runId) {
      const now = Date.now();
      const at = { elapsed_ms: now - started };
      if (!e) jsonLine(process.stdout, { event: 'started', run_id: runId, status: w.status, ...at });
      else if (e.event === 'status' && !e.terminal) jsonLine(process.stdout, { event: 'status', run_id: runId, status: e.data.status, progress: e.data.progress, ...at });
      else if (e.event === 'output') jsonLine(process.stdout, { event: 'output', run_id: runId, ...e.data, ...at });
      else if (e.event === 'progress') jsonLine(process.stdout, { event: 'progress', run_id: runId, ...e.data, ...at });
      else {
        // An output in flight: one line per change, but more characters alone at most once a second.
        const node = inFlightNode(e);
        const f = node === null ? undefined : w.flight.get(node);
        if (!f) return;
        if (e.event === 'delta' && now - (lastLine.get(f.outputNodeId) ?? 0) < WRITING_LINE_MS) return;
        lastLine.set(f.outputNodeId, now);
        jsonLine(process.stdout, {
          event: 'output_progress', run_id: runId, promptNodeId: f.promptNodeId, outputNodeId: f.outputNodeId, chars: f.chars, attempt: f.attempt,
          percent: f.percent, message: f.message, previewUrl: f.previewUrl, ...(e.event === 'reset' && { reset: true }), ...at,
        });
      }
    },
    done(w, runId, canceled) {
      jsonLine(process.stdout, {
        event: 'result', run_id: runId, status: w.status, error: w.run?.error ?? null, progress: w.progress,
        total_cost_micros: totalCost(w.outputs), results: w.outputs, ...(canceled && { canceled: true }), elapsed_ms: Date.now() - started,
      });
    },
    fail(e, runId) {
      const k = e as { type?: string; status?: number; requestId?: string | null };
      jsonLine(process.stdout, { event: 'error', ...(runId && { run_id: runId }), type: k.type ?? 'error', status: k.status ?? null, message: describe(e), request_id: k.requestId ?? null });
      process.stderr.write(`kiln run: ${describe(e)}\n`);
    },
  };
}

function outputLine(o: WorkflowRunResult): string {
  const mark = o.status === 'completed' ? green('✔') : o.status === 'skipped' ? dim('–') : red('✖');
  const name = o.label ? `${o.label} (${o.outputNodeId})` : o.outputNodeId;
  const detail = o.status === 'failed' ? red(o.error ?? 'failed') : o.url ?? (o.code ? dim(o.code.split('\n')[0]!.slice(0, 60)) : o.status);
  return `  ${mark} ${name}  ${dim(o.type)}  ${dollars(o.costMicros ?? 0)}  ${detail}`;
}

function ttyView(): View {
  const started = Date.now();
  let w: Watched | null = null;
  let id = '';
  let final: string | null = null;
  const block = new LiveBlock(process.stdout, (spin) => {
    const head = final ?? `${spin} run ${id} ${(w?.status ?? 'starting').padEnd(9)} ${w ? `${w.progress.completed}/${w.progress.total || '?'}` : ''}  ${elapsed(Date.now() - started)}`;
    if (!w) return [head];
    // One line per output, in the order they were first seen: settled, or being written.
    const lines: string[] = [];
    for (const node of w.order) {
      const settled = w.outputs.find((o) => o.outputNodeId === node);
      const f = w.flight.get(node);
      if (settled) lines.push(outputLine(settled));
      else if (f && !final) lines.push(`  ${spin} ${node}  ${dim(flightDetail(f))}`);
    }
    // The ones not started yet wait in place.
    if (!final) for (let i = lines.length; i < w.progress.total; i++) lines.push(`  ${dim(`${spin} waiting`)}`);
    return [head, ...lines];
  });
  return {
    event(state, _e, runId) {
      w = state;
      id = runId;
      block.draw();
    },
    done(state, runId, canceled) {
      w = state;
      id = runId;
      const ok = state.status === 'completed';
      final = `${ok ? green('✔') : red('✖')} run ${runId} ${canceled ? 'canceled' : state.status} in ${elapsed(Date.now() - started)} · ` +
        `${state.progress.completed}/${state.progress.total} outputs · total cost ${dollars(totalCost(state.outputs))}` +
        (state.run?.error && !canceled ? ` · ${state.run.error}` : '');
      block.close();
    },
    fail(e) {
      final = `${red('✖')} ${describe(e)}`;
      w = null;
      block.close();
    },
  };
}
