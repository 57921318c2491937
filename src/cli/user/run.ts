// `kiln run WORKFLOW_ID [--watch]`: starts a run of a saved workflow; with --watch follows its
// events (one line per output) to the results and their total cost. Ctrl-C while watching cancels
// the run on the server.

import type { KilnClient, RunEvent, WorkflowRun, WorkflowRunResult } from '../../client/index.ts';
import { parseArgs } from '../args.ts';
import { clientFromEnv, describe, EXIT, exitCodeOf, interruptible } from './exit.ts';
import { dim, dollars, elapsed, green, interactive, jsonLine, LiveBlock, red } from './live.ts';

export const RUN_HELP = 'WORKFLOW_ID [--watch] [--json] — start a run of a saved workflow; --watch follows every output to the results and the total cost';

interface Watched {
  run: WorkflowRun | null;
  status: string;
  progress: { total: number; completed: number };
  outputs: WorkflowRunResult[];
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
    const w: Watched = { run: null, status: started.status, progress: { total: 0, completed: 0 }, outputs: [] };
    view.event(w, null, runId);
    try {
      stop.signal.throwIfAborted();
      for await (const e of client.runs.watch(workflowId, runId, { signal: stop.signal })) {
        apply(w, e);
        view.event(w, e, runId);
      }
    } catch (e) {
      if (!stop.signal.aborted) throw e;
      const canceled = await cancel(client, workflowId, runId);
      apply(w, { id: '', event: 'status', data: canceled, terminal: true });
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

function apply(w: Watched, e: RunEvent): void {
  if (e.event === 'status') {
    w.run = e.data;
    w.status = e.data.status;
    w.progress = e.data.progress;
    // The terminal body holds every settled output: it is the authority for the results.
    if (e.terminal) w.outputs = e.data.results;
  } else if (e.event === 'output') {
    w.outputs.push(e.data);
  } else {
    w.progress = e.data;
  }
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
  event(w: Watched, e: RunEvent | null, runId: string): void;
  done(w: Watched, runId: string, canceled: boolean): void;
  fail(error: unknown, runId: string | null): void;
}

function jsonView(): View {
  const started = Date.now();
  return {
    event(w, e, runId) {
      const at = { elapsed_ms: Date.now() - started };
      if (!e) jsonLine(process.stdout, { event: 'started', run_id: runId, status: w.status, ...at });
      else if (e.event === 'status' && !e.terminal) jsonLine(process.stdout, { event: 'status', run_id: runId, status: e.data.status, progress: e.data.progress, ...at });
      else if (e.event === 'output') jsonLine(process.stdout, { event: 'output', run_id: runId, ...e.data, ...at });
      else if (e.event === 'progress') jsonLine(process.stdout, { event: 'progress', run_id: runId, ...e.data, ...at });
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
    const lines = w.outputs.map(outputLine);
    // One line per output: the ones still running wait in place.
    if (!final) for (let i = w.outputs.length; i < w.progress.total; i++) lines.push(`  ${dim(`${spin} waiting`)}`);
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
