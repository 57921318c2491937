// Workflows: saved workflows with "Run", "Edit" and their run history, "New workflow", the editor
// (editor.tsx, loaded on demand), and a run view that draws the run's snapshot graph
// (GET …/runs/{runId}/graph), each node's status updated live from the run's events, and each
// output in flight's text or preview as it is written (live.ts).

import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { money, shortId, when, type KilnClient } from './api.ts';
import { layoutGraph, preloadLayout, roundedPath, type GraphLayout } from './graph-layout.ts';
import { Highlighted } from './highlight.tsx';
import { NOTHING_YET, useFrameState, watchRun, writing, type OutputIds, type Writing, type WritingEvent } from './live.ts';
import { Alert, Empty, go, Loading, Section, Status, useLoad } from './ui.tsx';
import { WritingView } from './writing.tsx';

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

const KIND_LABEL: Record<string, string> = { text: 'Text', image: 'Image', prompt: 'Prompt', output: 'Output' };

/**
 * The run's graph: nodes as buttons placed by ELK's layered layout (graph-layout.ts), edges as
 * SVG paths behind them along the routes ELK found around the nodes, each with an arrowhead.
 * Nodes are measured first (hidden), then laid out, and laid out again when their sizes or the
 * card's width change.
 */
function RunGraph({ graph, run, onPick, picked }: { graph: Graph; run: Run; onPick: (id: string) => void; picked: string | null }) {
  const status = nodeStatuses(graph, run);
  const box = useRef<HTMLDivElement>(null);
  const [layout, setLayout] = useState<GraphLayout | null>(null);
  const [failed, setFailed] = useState(false);
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    let seen = '';
    let latest = 0;
    const measure = () => {
      const sizes = new Map<string, { width: number; height: number }>();
      for (const n of graph.nodes) {
        const b = el.querySelector<HTMLElement>(`[data-node-id="${CSS.escape(n.id)}"]`);
        if (b) sizes.set(n.id, { width: b.offsetWidth, height: b.offsetHeight });
      }
      const width = el.clientWidth;
      const key = JSON.stringify([width, [...sizes]]);
      if (key === seen || width === 0) return;
      seen = key;
      const mine = ++latest;
      layoutGraph(sizes, graph.edges, width).then(
        (l) => mine === latest && setLayout(l),
        () => mine === latest && setFailed(true),
      );
    };
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => {
      latest = -1;
      ro.disconnect();
    };
  }, [graph, JSON.stringify([...status])]);

  // Reading order follows the layout: layer by layer, then across.
  const at = (id: string) => layout?.nodes.get(id);
  const order = [...graph.nodes];
  if (layout) {
    const [main, cross] = layout.direction === 'RIGHT' ? (['x', 'y'] as const) : (['y', 'x'] as const);
    order.sort((a, b) => (at(a.id)?.[main] ?? 0) - (at(b.id)?.[main] ?? 0) || (at(a.id)?.[cross] ?? 0) - (at(b.id)?.[cross] ?? 0));
  }
  const ready = !!layout && !failed;
  return (
    <div class={`graph${ready ? ' ready' : ''}${failed ? ' failed' : ''}`} ref={box} data-direction={layout?.direction}>
      {failed && <p class="muted small">The graph could not be laid out; its nodes are listed below.</p>}
      {!layout && !failed && <p class="muted small graph-wait" role="status">Laying out the graph…</p>}
      <div class="graph-canvas" style={ready ? { width: `${layout.width}px`, height: `${layout.height}px` } : undefined}>
        {ready && (
          <svg class="edges" width={layout.width} height={layout.height} aria-hidden="true">
            <defs>
              <marker id="graph-arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="8" markerHeight="8" orient="auto-start-reverse" markerUnits="userSpaceOnUse">
                <path d="M0,0.5 L8,4 L0,7.5 z" />
              </marker>
              <marker id="graph-arrow-live" class="live" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="8" markerHeight="8" orient="auto-start-reverse" markerUnits="userSpaceOnUse">
                <path d="M0,0.5 L8,4 L0,7.5 z" />
              </marker>
            </defs>
            {layout.edges.map((e) => {
              const live = status.get(e.to) === 'running';
              return <path key={`${e.from}>${e.to}`} data-from={e.from} data-to={e.to} class={live ? 'live' : ''} d={roundedPath(e.points)}
                marker-end={`url(#${live ? 'graph-arrow-live' : 'graph-arrow'})`} />;
            })}
          </svg>
        )}
        <ul class="graph-nodes" aria-label="Run graph">
          {order.map((n) => {
            const s = status.get(n.id) ?? 'pending';
            const title = n.label ?? n.id;
            const p = ready ? at(n.id) : undefined;
            return (
              <li key={n.id} style={p ? { left: `${p.x}px`, top: `${p.y}px` } : undefined}>
                <button type="button" class={`node k-${n.kind} n-${s}${picked === n.id ? ' picked' : ''}`} data-node-id={n.id} data-status={s}
                  aria-pressed={picked === n.id} onClick={() => onPick(n.id)} title={title}>
                  <span class="node-kind">{KIND_LABEL[n.kind] ?? n.kind}{n.output ? ` · ${n.output}` : ''}{n.platform ? ` · ${n.platform}` : ''}</span>
                  <span class="node-title">{title}</span>
                  <span class="node-status"><span class="dot" aria-hidden="true" />{s}</span>
                  {n.model && <span class="node-model">{n.model}</span>}
                </button>
              </li>
            );
          })}
        </ul>
      </div>
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

/** An output in flight: what its prompt node has written so far, until it settles. */
function LiveResultView({ graph, promptNodeId, outputNodeId, w }: { graph: Graph | null; promptNodeId: string; outputNodeId: string; w: Writing }) {
  const out = graph?.nodes.find((n) => n.id === outputNodeId);
  const prompt = graph?.nodes.find((n) => n.id === promptNodeId);
  const name = out?.label ?? outputNodeId;
  return (
    <div class="result live" data-live-output={outputNodeId} data-prompt-node={promptNodeId}>
      <p><Status status="running" /> <strong>{name}</strong> <span class="muted">{prompt?.output ?? ''}{prompt?.model ? ` · ${prompt.model}` : ''} · writing…</span></p>
      <WritingView w={w} alt={`output ${name}`} code={prompt?.output === 'code'} empty={<p class="muted small"><span class="spinner" aria-hidden="true" /> Waiting for the model…</p>} />
    </div>
  );
}

const outputKey = (x: { promptNodeId: string; outputNodeId: string }) => `${x.promptNodeId}>${x.outputNodeId}`;

function RunView({ client, workflowId, runId }: { client: KilnClient; workflowId: string; runId: string }) {
  const [graph] = useLoad((signal) => client.runs.graph(workflowId, runId, { signal }), [client, workflowId, runId]);
  const [load, reload, setRun] = useLoad((signal) => client.runs.get(workflowId, runId, { signal }), [client, workflowId, runId]);
  const [picked, setPicked] = useState<string | null>(null);
  const [action, setAction] = useState<{ busy: boolean; error?: unknown }>({ busy: false });
  // Outputs in flight (by `promptNodeId>outputNodeId`): what each has written, rendered once a frame.
  const [writes, updateWrites, setWrites] = useFrameState<Record<string, { ids: OutputIds; w: Writing }>>({});
  const run = load.state === 'ok' ? load.value : null;
  const live = run && !TERMINAL.has(run.status);
  // Live: the run's event stream; each event updates the run, or an output in flight, in place.
  useEffect(() => {
    if (!live) return;
    const ac = new AbortController();
    setWrites({});
    (async () => {
      try {
        for await (const ev of watchRun(client, workflowId, runId, { signal: ac.signal })) {
          if (ac.signal.aborted) break;
          switch (ev.event) {
            case 'status':
              if (ev.terminal) setWrites({});
              setRun(ev.data);
              break;
            case 'output': {
              // Settled: its result replaces what was streamed.
              const k = outputKey(ev.data);
              updateWrites(({ [k]: _, ...rest }) => rest);
              setRunWith((r) => ({ ...r, results: [...r.results.filter((x) => outputKey(x) !== k), ev.data] }));
              break;
            }
            case 'progress':
              setRunWith((r) => ({ ...r, progress: ev.data }));
              break;
            case 'delta': case 'preview': case 'reset': case 'output-progress': {
              const k = outputKey(ev.data);
              const e: WritingEvent = ev.event === 'output-progress' ? { event: 'progress', data: ev.data } : ev;
              const ids = { promptNodeId: ev.data.promptNodeId, outputNodeId: ev.data.outputNodeId };
              updateWrites((all) => ({ ...all, [k]: { ids, w: writing(all[k]?.w ?? NOTHING_YET, e) } }));
              break;
            }
          }
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
  const settled = new Set(run?.results.map(outputKey));
  const inFlight = Object.entries(writes)
    .map(([k, { ids, w }]) => ({ k, w, ...ids }))
    .filter((x) => !settled.has(x.k) && (!picked || x.outputNodeId === picked || x.promptNodeId === picked));
  return (
    <Section title="Workflows" intro={<><a href={`#/workflows/${workflowId}`}>← Runs of this workflow</a> · <a href={`#/workflows/${workflowId}/edit`}>Edit the workflow</a></>}
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
          {(picked ? pickedResults : run.results).length === 0 && inFlight.length === 0 && <p class="muted">{picked ? 'Nothing settled for this node yet.' : 'No output has settled yet.'}</p>}
          {(picked ? pickedResults : run.results).map((r) => <ResultView key={outputKey(r)} r={r} />)}
          {inFlight.map((x) => <LiveResultView key={x.k} graph={graph.state === 'ok' ? graph.value : null} promptNodeId={x.promptNodeId} outputNodeId={x.outputNodeId} w={x.w} />)}
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
      actions={<><button type="button" class="btn ghost small" onClick={reload}>Refresh</button><a class="btn small" href={`#/workflows/${workflowId}/edit`}>Edit</a><button type="button" class="btn primary small" disabled={start.busy} onClick={runNow}>Run</button></>}>
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
    <Section title="Workflows" intro="Generation graphs, saved and run server-side. Draw one with New workflow, or save one through the API."
      actions={<button type="button" class="btn primary small" onClick={() => go('workflows/new')}>New workflow</button>}>
      {start.error !== undefined && <Alert error={start.error} />}
      {list.state === 'loading' && <Loading what="workflows" />}
      {list.state === 'error' && <Alert error={list.error} />}
      {list.state === 'ok' && list.value.data.length === 0 && (
        <Empty title="No saved workflows">Press New workflow to draw one, or save one with <code>POST /workflows</code> or <code>kiln workflow save FILE.json</code>.</Empty>
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
                <a class="btn small" href={`#/workflows/${w.id}/edit`} aria-label={`Edit ${w.name}`}>Edit</a>
                <button type="button" class="btn primary small" disabled={start.busy === w.id} onClick={() => runNow(w.id)} aria-label={`Run ${w.name}`}>Run</button>
              </div>
            </li>
          ))}
        </ul>
      )}
    </Section>
  );
}

type EditorModule = typeof import('./editor.tsx');
let editorModule: Promise<EditorModule> | null = null;

/** The editor's code (React Flow and the editor itself), a chunk loaded when an editor is first opened. */
function loadEditor(): Promise<EditorModule> {
  editorModule ??= import('./editor.tsx').catch((e) => {
    editorModule = null; // a failed download is tried again next time
    throw e;
  });
  return editorModule;
}

function EditorLoader({ client, workflowId }: { client: KilnClient; workflowId: string | null }) {
  const [mod] = useLoad(() => loadEditor(), []);
  if (mod.state === 'ok') return <mod.value.WorkflowEditor client={client} workflowId={workflowId} />;
  return (
    <Section title="Workflows" intro={<a href="#/workflows">← All workflows</a>}>
      {mod.state === 'loading' ? <Loading what="the editor" /> : <Alert error={mod.error} />}
    </Section>
  );
}

export function Workflows({ client, workflowId, runId, edit }: { client: KilnClient; workflowId?: string; runId?: string; edit?: boolean }) {
  useEffect(preloadLayout, []);
  if (workflowId === 'new') return <EditorLoader key="new" client={client} workflowId={null} />;
  if (workflowId && edit) return <EditorLoader key={workflowId} client={client} workflowId={workflowId} />;
  if (workflowId && runId) return <RunView client={client} workflowId={workflowId} runId={runId} />;
  if (workflowId) return <WorkflowRuns client={client} workflowId={workflowId} />;
  return <WorkflowList client={client} />;
}
