// Workflows: saved workflows with "Run" and their run history, and a run view that draws the run's
// snapshot graph (GET …/runs/{runId}/graph), each node's status updated live from the run's events.

import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { money, shortId, when, type KilnClient } from './api.ts';
import { Highlighted } from './highlight.tsx';
import { Alert, Empty, go, Loading, Section, Status, useLoad } from './ui.tsx';

type Run = Awaited<ReturnType<KilnClient['runs']['get']>>;
type Graph = Awaited<ReturnType<KilnClient['runs']['graph']>>;
type GraphNode = Graph['nodes'][number];
type Result = Run['results'][number];
type NodeStatus = 'pending' | 'running' | 'completed' | 'failed' | 'skipped';

const TERMINAL = new Set(['completed', 'failed']);

/**
 * Each node's status from the snapshot and the results settled so far. Inputs (text, image) are
 * there from the start; an output is what its result says; a prompt is running once every output
 * it reads has completed (that is when the run queues it), and whatever has not settled when the
 * run ends was abandoned (skipped).
 */
export function nodeStatuses(graph: Graph, run: Run): Map<string, NodeStatus> {
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  const into = new Map<string, string[]>();
  const outOf = new Map<string, string[]>();
  for (const e of graph.edges) {
    into.set(e.to, [...(into.get(e.to) ?? []), e.from]);
    outOf.set(e.from, [...(outOf.get(e.from) ?? []), e.to]);
  }
  const results = new Map<string, Result>();
  for (const r of run.results) results.set(`${r.promptNodeId}>${r.outputNodeId}`, r);
  const status = new Map<string, NodeStatus>();
  const ended = TERMINAL.has(run.status);

  const promptStatus = (p: GraphNode): NodeStatus => {
    const outs = (outOf.get(p.id) ?? []).filter((o) => byId.get(o)?.kind === 'output');
    const settled = outs.map((o) => results.get(`${p.id}>${o}`)).filter((r): r is Result => !!r);
    if (outs.length && settled.length === outs.length) {
      if (settled.some((r) => r.status === 'failed')) return 'failed';
      if (settled.every((r) => r.status === 'skipped')) return 'skipped';
      return 'completed';
    }
    if (settled.some((r) => r.status === 'failed')) return 'failed';
    if (ended) return 'skipped';
    if (run.status === 'pending') return 'pending';
    // Ready when every output node it reads has a completed result.
    const ready = (into.get(p.id) ?? []).every((src) => {
      const n = byId.get(src);
      if (n?.kind !== 'output') return true;
      const feeding = (into.get(src) ?? []).map((pp) => results.get(`${pp}>${src}`));
      return feeding.length > 0 && feeding.every((r) => r?.status === 'completed');
    });
    return ready ? 'running' : 'pending';
  };

  for (const n of graph.nodes) {
    if (n.kind === 'text' || n.kind === 'image') status.set(n.id, 'completed');
    else if (n.kind === 'prompt') status.set(n.id, promptStatus(n));
  }
  for (const n of graph.nodes) {
    if (n.kind !== 'output') continue;
    const feeding = (into.get(n.id) ?? []).filter((p) => byId.get(p)?.kind === 'prompt');
    const rs = feeding.map((p) => results.get(`${p}>${n.id}`));
    if (rs.length && rs.every(Boolean)) {
      const s = rs.some((r) => r!.status === 'failed') ? 'failed' : rs.every((r) => r!.status === 'skipped') ? 'skipped' : 'completed';
      status.set(n.id, s);
    } else {
      const ps = feeding.map((p) => status.get(p));
      status.set(n.id, ps.includes('failed') ? 'failed' : ps.includes('running') ? 'running' : ended ? 'skipped' : 'pending');
    }
  }
  return status;
}

/** Layers by longest path from a source, so every edge points down. */
function layers(graph: Graph): GraphNode[][] {
  const depth = new Map<string, number>();
  const into = new Map<string, string[]>();
  for (const e of graph.edges) into.set(e.to, [...(into.get(e.to) ?? []), e.from]);
  const visit = (id: string, seen: Set<string>): number => {
    if (depth.has(id)) return depth.get(id)!;
    if (seen.has(id)) return 0;
    seen.add(id);
    const d = Math.max(-1, ...(into.get(id) ?? []).map((p) => visit(p, seen))) + 1;
    depth.set(id, d);
    return d;
  };
  for (const n of graph.nodes) visit(n.id, new Set());
  const out: GraphNode[][] = [];
  for (const n of graph.nodes) (out[depth.get(n.id) ?? 0] ??= []).push(n);
  return out.filter(Boolean);
}

const KIND_LABEL: Record<string, string> = { text: 'Text', image: 'Image', prompt: 'Prompt', output: 'Output' };

function RunGraph({ graph, run, onPick, picked }: { graph: Graph; run: Run; onPick: (id: string) => void; picked: string | null }) {
  const status = nodeStatuses(graph, run);
  const box = useRef<HTMLDivElement>(null);
  const [paths, setPaths] = useState<Array<{ d: string; live: boolean; key: string }>>([]);
  const rows = layers(graph);
  const layerOf = new Map(rows.flatMap((row, i) => row.map((n) => [n.id, i] as const)));
  // Edges are drawn once the nodes are laid out (and again when the box changes size).
  // Left to right when every layer fits side by side (a desktop), top to bottom otherwise (a phone).
  const [across, setAcross] = useState(false);
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    const draw = () => {
      const fits = rows.length * 210 <= el.clientWidth;
      if (fits !== across) {
        setAcross(fits);
        return; // drawn again once laid out the other way
      }
      const base = el.getBoundingClientRect();
      const rect = (id: string) => el.querySelector<HTMLElement>(`[data-node-id="${CSS.escape(id)}"]`)?.getBoundingClientRect();
      setPaths(graph.edges.flatMap((e) => {
        const a = rect(e.from);
        const b = rect(e.to);
        if (!a || !b) return [];
        const span = Number(layerOf.get(e.to) ?? 0) - Number(layerOf.get(e.from) ?? 0);
        const L = (r: DOMRect) => r.left - base.left;
        const R = (r: DOMRect) => r.right - base.left;
        const T = (r: DOMRect) => r.top - base.top;
        const B = (r: DOMRect) => r.bottom - base.top;
        const cx = (r: DOMRect) => (L(r) + R(r)) / 2;
        const cy = (r: DOMRect) => (T(r) + B(r)) / 2;
        let d: string;
        if (span > 1 && across) {
          // An edge that skips layers goes around the nodes between (below them), not behind them.
          const low = Math.max(B(a), B(b)) + 16 + 10 * (span - 2);
          d = `M${cx(a)},${B(a)} C${cx(a)},${low} ${cx(a)},${low} ${cx(a) + 24},${low} L${cx(b) - 24},${low} C${cx(b)},${low} ${cx(b)},${low} ${cx(b)},${B(b)}`;
        } else if (span > 1) {
          const right = Math.max(R(a), R(b)) + 18 + 10 * (span - 2);
          d = `M${R(a)},${cy(a)} C${right},${cy(a)} ${right},${cy(a)} ${right},${cy(a) + 24} L${right},${cy(b) - 24} C${right},${cy(b)} ${right},${cy(b)} ${R(b)},${cy(b)}`;
        } else if (across) {
          const mx = (R(a) + L(b)) / 2;
          d = `M${R(a)},${cy(a)} C${mx},${cy(a)} ${mx},${cy(b)} ${L(b)},${cy(b)}`;
        } else {
          const my = (B(a) + T(b)) / 2;
          d = `M${cx(a)},${B(a)} C${cx(a)},${my} ${cx(b)},${my} ${cx(b)},${T(b)}`;
        }
        return [{ key: `${e.from}>${e.to}`, d, live: status.get(e.to) === 'running' }];
      }));
    };
    draw();
    const ro = new ResizeObserver(draw);
    ro.observe(el);
    return () => ro.disconnect();
  }, [graph, across, JSON.stringify([...status])]);
  return (
    <div class={`graph${across ? ' across' : ''}`} ref={box}>
      <svg class="edges" aria-hidden="true">
        {paths.map((p) => <path key={p.key} d={p.d} class={p.live ? 'live' : ''} />)}
      </svg>
      <ol class="graph-layers" aria-label="Run graph">
        {rows.map((row, i) => (
          <li key={i} class="graph-layer">
            <ul>
              {row.map((n) => {
                const s = status.get(n.id) ?? 'pending';
                const title = n.label ?? n.id;
                return (
                  <li key={n.id}>
                    <button type="button" class={`node k-${n.kind} n-${s}${picked === n.id ? ' picked' : ''}`} data-node-id={n.id} data-status={s}
                      aria-pressed={picked === n.id} onClick={() => onPick(n.id)}>
                      <span class="node-kind">{KIND_LABEL[n.kind] ?? n.kind}{n.output ? ` · ${n.output}` : ''}{n.platform ? ` · ${n.platform}` : ''}</span>
                      <span class="node-title">{title}</span>
                      <span class="node-status"><span class="dot" aria-hidden="true" />{s}{n.model ? ` · ${n.model}` : ''}</span>
                    </button>
                  </li>
                );
              })}
            </ul>
          </li>
        ))}
      </ol>
    </div>
  );
}

function ResultView({ r }: { r: Result }) {
  return (
    <div class="result">
      <p><Status status={r.status} /> <strong>{r.label ?? r.outputNodeId}</strong> <span class="muted">{r.type}{r.model ? ` · ${r.model}` : ''}</span> {r.costMicros !== undefined && <span class="cost">{money(r.costMicros)}</span>}</p>
      {r.error && <div class="notice error">{r.error}</div>}
      {r.url && <img class="result-image" src={r.url} alt={`Output ${r.label ?? r.outputNodeId}`} />}
      {r.code && <Highlighted code={r.code} />}
    </div>
  );
}

function RunView({ client, workflowId, runId }: { client: KilnClient; workflowId: string; runId: string }) {
  const [graph] = useLoad((signal) => client.runs.graph(workflowId, runId, { signal }), [client, workflowId, runId]);
  const [load, reload, setRun] = useLoad((signal) => client.runs.get(workflowId, runId, { signal }), [client, workflowId, runId]);
  const [picked, setPicked] = useState<string | null>(null);
  const [action, setAction] = useState<{ busy: boolean; error?: unknown }>({ busy: false });
  const run = load.state === 'ok' ? load.value : null;
  const live = run && !TERMINAL.has(run.status);
  // Live: the run's event stream; each event updates the run in place.
  useEffect(() => {
    if (!live) return;
    const ac = new AbortController();
    (async () => {
      try {
        for await (const ev of client.runs.watch(workflowId, runId, { signal: ac.signal })) {
          if (ev.event === 'status') setRun(ev.data);
          else if (ev.event === 'output') setRunWith((r) => ({ ...r, results: [...r.results.filter((x) => !(x.promptNodeId === ev.data.promptNodeId && x.outputNodeId === ev.data.outputNodeId)), ev.data] }));
          else if (ev.event === 'progress') setRunWith((r) => ({ ...r, progress: ev.data }));
        }
      } catch {
        /* aborted, or gave up after its retries: a reload reads the run again */
      }
    })();
    return () => ac.abort();
  }, [client, workflowId, runId, live]);
  const latest = useRef<Run | null>(null);
  latest.current = run;
  const setRunWith = (f: (r: Run) => Run) => latest.current && setRun((latest.current = f(latest.current)));

  const act = async (what: 'cancel' | 'retry') => {
    setAction({ busy: true });
    try {
      if (what === 'cancel') {
        setRun(await client.runs.cancel(workflowId, runId) as Run);
      } else {
        const next = await client.runs.retry(workflowId, runId);
        go(`workflows/${workflowId}/runs/${next.id}`);
      }
      setAction({ busy: false });
    } catch (error) {
      setAction({ busy: false, error });
    }
  };
  const pickedResults = run && picked ? run.results.filter((r) => r.outputNodeId === picked || r.promptNodeId === picked) : [];
  return (
    <Section title="Workflows" intro={<a href={`#/workflows/${workflowId}`}>← Runs of this workflow</a>}
      actions={run && (
        <>
          {!TERMINAL.has(run.status) && <button type="button" class="btn danger small" disabled={action.busy} onClick={() => act('cancel')}>Cancel run</button>}
          {run.status === 'failed' && <button type="button" class="btn primary small" disabled={action.busy} onClick={() => act('retry')}>Retry run</button>}
          <button type="button" class="btn ghost small" onClick={reload}>Refresh</button>
        </>
      )}>
      {action.error !== undefined && <Alert error={action.error} />}
      {(load.state === 'loading' || graph.state === 'loading') && <Loading what="the run" />}
      {load.state === 'error' && <Alert error={load.error} />}
      {graph.state === 'error' && <Alert error={graph.error} />}
      {run && (
        <div class="card run-head">
          <h2 class="card-title">Run {shortId(run.id)}</h2>
          <p class="run-status" role="status" data-run-status={run.status}>
            <Status status={run.status} /> {run.progress.completed} of {run.progress.total} outputs settled
            {run.retryOf && <> · retry of <a href={`#/workflows/${workflowId}/runs/${run.retryOf}`}>{shortId(run.retryOf)}</a></>}
          </p>
          <div class="bar" role="progressbar" aria-label="Outputs settled" aria-valuemin={0} aria-valuemax={run.progress.total} aria-valuenow={run.progress.completed}>
            <span style={{ width: `${run.progress.total ? (run.progress.completed / run.progress.total) * 100 : 0}%` }} />
          </div>
          {run.error && <div class="notice error">{run.error}</div>}
          <p class="muted small">Started {when(run.createdAt)}{run.completedAt ? ` · ended ${when(run.completedAt)}` : ''} · cost {money(run.results.reduce((s, r) => s + (r.costMicros ?? 0), 0))}</p>
        </div>
      )}
      {run && graph.state === 'ok' && (
        <div class="card">
          <h2 class="card-title">Graph</h2>
          <RunGraph graph={graph.value} run={run} picked={picked} onPick={(id) => setPicked(picked === id ? null : id)} />
          <p class="muted small legend-line">
            {(['pending', 'running', 'completed', 'failed', 'skipped'] as const).map((s) => <span key={s} class={`key n-${s}`}><span class="dot" aria-hidden="true" />{s}</span>)}
          </p>
        </div>
      )}
      {run && (
        <div class="card">
          <h2 class="card-title">{picked ? `Results of ${picked}` : 'Results'}</h2>
          {(picked ? pickedResults : run.results).length === 0 && <p class="muted">{picked ? 'Nothing settled for this node yet.' : 'No output has settled yet.'}</p>}
          {(picked ? pickedResults : run.results).map((r) => <ResultView key={`${r.promptNodeId}>${r.outputNodeId}`} r={r} />)}
        </div>
      )}
    </Section>
  );
}

function WorkflowRuns({ client, workflowId }: { client: KilnClient; workflowId: string }) {
  const [runs, reload] = useLoad((signal) => client.runs.list(workflowId, { limit: 50 }, { signal }), [client, workflowId]);
  const [workflows] = useLoad((signal) => client.workflows.list({ limit: 100 }, { signal }), [client]);
  const [start, setStart] = useState<{ busy: boolean; error?: unknown }>({ busy: false });
  const name = workflows.state === 'ok' ? workflows.value.data.find((w) => w.id === workflowId)?.name : undefined;
  const runNow = async () => {
    setStart({ busy: true });
    try {
      const r = await client.runs.start(workflowId);
      go(`workflows/${workflowId}/runs/${r.id}`);
    } catch (error) {
      setStart({ busy: false, error });
    }
  };
  return (
    <Section title="Workflows" intro={<><a href="#/workflows">← All workflows</a>{name && <> · <strong>{name}</strong></>}</>}
      actions={<><button type="button" class="btn ghost small" onClick={reload}>Refresh</button><button type="button" class="btn primary small" disabled={start.busy} onClick={runNow}>Run</button></>}>
      {start.error !== undefined && <Alert error={start.error} />}
      {runs.state === 'loading' && <Loading what="runs" />}
      {runs.state === 'error' && <Alert error={runs.error} />}
      {runs.state === 'ok' && runs.value.data.length === 0 && <Empty title="No runs yet">Press Run to start one.</Empty>}
      {runs.state === 'ok' && runs.value.data.length > 0 && (
        <div class="card table-card">
          <table class="table">
            <caption class="sr-only">Run history</caption>
            <thead><tr><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Progress</th><th scope="col">Started</th></tr></thead>
            <tbody>
              {runs.value.data.map((r) => (
                <tr key={r.id}>
                  <td><a href={`#/workflows/${workflowId}/runs/${r.id}`}>{shortId(r.id)}</a>{r.retryOf && <span class="muted small"> retry</span>}</td>
                  <td><Status status={r.status} /></td>
                  <td>{r.progress.completed}/{r.progress.total}</td>
                  <td>{when(r.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Section>
  );
}

function WorkflowList({ client }: { client: KilnClient }) {
  const [list] = useLoad((signal) => client.workflows.list({ limit: 100 }, { signal }), [client]);
  const [start, setStart] = useState<{ busy: string | null; error?: unknown }>({ busy: null });
  const runNow = async (id: string) => {
    setStart({ busy: id });
    try {
      const r = await client.runs.start(id);
      go(`workflows/${id}/runs/${r.id}`);
    } catch (error) {
      setStart({ busy: null, error });
    }
  };
  return (
    <Section title="Workflows" intro="Saved generation graphs, run server-side. Save one with kiln workflow import.">
      {start.error !== undefined && <Alert error={start.error} />}
      {list.state === 'loading' && <Loading what="workflows" />}
      {list.state === 'error' && <Alert error={list.error} />}
      {list.state === 'ok' && list.value.data.length === 0 && (
        <Empty title="No saved workflows">Import one with <code>kiln workflow import FILE.json</code>; examples are in src/workflows/examples.</Empty>
      )}
      {list.state === 'ok' && list.value.data.length > 0 && (
        <ul class="list">
          {list.value.data.map((w) => (
            <li key={w.id} class="card list-item">
              <div>
                <a class="list-title" href={`#/workflows/${w.id}`}>{w.name}</a>
                <p class="muted small">Updated {when(w.updated_at)} · <code>{shortId(w.id)}</code></p>
              </div>
              <div class="actions">
                <a class="btn ghost small" href={`#/workflows/${w.id}`} aria-label={`Run history of ${w.name}`}>History</a>
                <button type="button" class="btn primary small" disabled={start.busy === w.id} onClick={() => runNow(w.id)} aria-label={`Run ${w.name}`}>Run</button>
              </div>
            </li>
          ))}
        </ul>
      )}
    </Section>
  );
}

export function Workflows({ client, workflowId, runId }: { client: KilnClient; workflowId?: string; runId?: string }) {
  if (workflowId && runId) return <RunView client={client} workflowId={workflowId} runId={runId} />;
  if (workflowId) return <WorkflowRuns client={client} workflowId={workflowId} />;
  return <WorkflowList client={client} />;
}
