// The workflow editor (docs/console.md, "The workflow editor"): the document, its undo history and
// the selection, and what each control does to them. Its parts: the canvas (editor-canvas.tsx,
// React Flow with every edge routed around the nodes), the side panel (editor-panel.tsx), the
// head, toolbar, Add edge form and save notices (editor-toolbar.tsx), and the saving
// (editor-saving.ts). Leaving with unsaved changes asks first. It reads and writes only through
// the public API: GET/POST/PUT/DELETE /workflows, GET /models, GET /generations (the image picker)
// and POST /workflows/{id}/runs. Loaded on demand (its own chunk), like the layout engine.

import { ReactFlowProvider, useNodesInitialized, useReactFlow } from '@xyflow/react';
import { useEffect, useRef, useState } from 'preact/hooks';
import { type KilnClient } from './api.ts';
import { Canvas, FIT, NEW_SIZE, type Selection, type Size } from './editor-canvas.tsx';
import { SidePanel } from './editor-panel.tsx';
import { calls, useSaving } from './editor-saving.ts';
import { EdgeForm, EditorHead, SaveNotices, Toolbar, type EdgeFormState } from './editor-toolbar.tsx';
import { layoutGraph } from './graph-layout.ts';
import { Alert, ConfirmDialog, holdNavigation, leave, Loading, Section, useLoad } from './ui.tsx';
import {
  commit, connectionProblem, edgeKey, fromGraph, history, newNode, noProblems, redo, replace, saveBody, stepFrom, undo,
  type Doc, type DocNode, type History, type Kind, type Problems,
} from './workflow-doc.ts';

const isTextField = (t: EventTarget | null) =>
  t instanceof HTMLTextAreaElement || (t instanceof HTMLInputElement && !['button', 'checkbox', 'radio', 'submit'].includes(t.type)) || (t instanceof HTMLElement && t.isContentEditable);

/** Whether a graph's nodes read top to bottom: most of its edges go down more than across. */
export function readsDown(doc: Doc): boolean {
  const at = new Map(doc.nodes.map((n) => [n.id, n.position]));
  let down = 0;
  for (const e of doc.edges) {
    const a = at.get(e.from);
    const b = at.get(e.to);
    if (a && b && b.y - a.y > Math.abs(b.x - a.x)) down++;
  }
  return doc.edges.length > 0 && down > doc.edges.length / 2;
}

/** ELK options for the editor's auto-layout: room between layers for the handles and arrowheads. */
const LAYOUT = { 'elk.layered.spacing.nodeNodeBetweenLayers': '80', 'elk.spacing.nodeNode': '36', 'elk.padding': '[top=20,left=20,bottom=20,right=20]' };

/**
 * While there are unsaved changes: a real navigation (reload, another page, closing the tab) gets
 * the browser's own question (beforeunload), and a console link, Back or a typed address waits
 * for the editor's (`ask` is given where it would go).
 */
function useLeaveGuard(unsaved: boolean, ask: (to: string) => void) {
  useEffect(() => {
    if (!unsaved) return;
    const onUnload = (e: BeforeUnloadEvent) => {
      e.preventDefault();
      e.returnValue = '';
    };
    holdNavigation(ask);
    addEventListener('beforeunload', onUnload);
    return () => {
      holdNavigation(null);
      removeEventListener('beforeunload', onUnload);
    };
  }, [unsaved]);
}

function Editor({ client, workflowId, initial, onCreated }: {
  client: KilnClient; workflowId: string | null; initial: { doc: Doc; version: number | null; unplaced: boolean }; onCreated: (id: string) => void;
}) {
  const flow = useReactFlow();
  const [h, setH] = useState<History>(() => history(initial.doc));
  const hRef = useRef(h);
  hRef.current = h;
  const doc = h.present;
  const [selection, setSelection] = useState<Selection>(null);
  const [measured, setMeasured] = useState<Map<string, Size>>(new Map());
  const [problems, setProblems] = useState<Problems>(noProblems);
  const [edgeForm, setEdgeForm] = useState<EdgeFormState>({ open: false, from: '', to: '', problem: null });
  const [previews, setPreviews] = useState<Map<string, string>>(new Map());
  // Handles on the left and right, or on the top and bottom of the nodes when the graph reads top
  // to bottom (as Auto-layout lays it out on a narrow canvas).
  const [down, setDown] = useState(() => readsDown(initial.doc));
  const [models] = useLoad((signal) => client.models.list({ signal }), [client]);
  const modelList = models.state === 'ok' ? models.value.data : null;
  const dragBase = useRef<Doc | null>(null);
  const root = useRef<HTMLDivElement>(null);
  // Where a held navigation would go (the leave dialog is open), and whether Delete workflow asks.
  const [leaving, setLeaving] = useState<string | null>(null);
  const [deleting, setDeleting] = useState(false);

  const saving = useSaving({
    client, workflowId, initial, doc, onCreated, setProblems,
    onReloaded: (fresh) => {
      setH((cur) => commit(cur, fresh));
      setDown(readsDown(fresh));
      setSelection(null);
    },
  });
  const { save, setSave } = saving;
  useLeaveGuard(saving.unsaved, setLeaving);

  const edit = (next: Doc, coalesce: string | null = null) => setH((cur) => commit(cur, next, coalesce));
  const setDoc = (f: (d: Doc) => Doc, coalesce: string | null = null) => setH((cur) => commit(cur, f(cur.present), coalesce));

  // A node's problems go once the node is edited; the rest stay until the next save.
  const clearNodeProblems = (nodeId: string) => {
    if (!problems.nodes.has(nodeId)) return;
    const nodes = new Map(problems.nodes);
    nodes.delete(nodeId);
    setProblems({ ...problems, nodes });
  };

  const updateNode = (nodeId: string, patch: Partial<DocNode>, field: string) => {
    setDoc((d) => ({ ...d, nodes: d.nodes.map((n) => (n.id === nodeId ? { ...n, ...patch } : n)) }), `${nodeId}:${field}`);
    clearNodeProblems(nodeId);
  };

  const sizeOf = (nodeId: string) => measured.get(nodeId) ?? NEW_SIZE;

  /**
   * Where a new node goes: right of the selected node (or of the last one added), where a graph
   * read left to right puts what it feeds; the middle of the view on an empty canvas. Moved down
   * while it would overlap another node.
   */
  const freeSpot = (d: Doc, kind: Kind) => {
    const anchor = (selection?.type === 'node' && d.nodes.find((n) => n.id === selection.id)) || d.nodes[d.nodes.length - 1];
    let p: { x: number; y: number };
    if (!anchor) {
      const box = root.current?.querySelector('.editor-canvas')?.getBoundingClientRect();
      p = box ? flow.screenToFlowPosition({ x: box.left + box.width / 2 - NEW_SIZE.width / 2, y: box.top + box.height / 2 - NEW_SIZE.height / 2 }) : { x: 0, y: 0 };
    } else if (kind === 'text' || kind === 'image') {
      // Inputs feed the rest: the first column (or row), beside the nodes there.
      p = down ? { x: anchor.position.x, y: Math.min(...d.nodes.map((n) => n.position.y)) } : { x: Math.min(...d.nodes.map((n) => n.position.x)), y: anchor.position.y };
    } else {
      p = down ? { x: anchor.position.x, y: anchor.position.y + sizeOf(anchor.id).height + 70 } : { x: anchor.position.x + sizeOf(anchor.id).width + 70, y: anchor.position.y };
    }
    const overlaps = (q: { x: number; y: number }) => d.nodes.some((n) => {
      const s = sizeOf(n.id);
      return q.x < n.position.x + s.width + 24 && q.x + NEW_SIZE.width + 24 > n.position.x && q.y < n.position.y + s.height + 24 && q.y + NEW_SIZE.height + 24 > n.position.y;
    });
    for (let i = 0; i < 100 && overlaps(p); i++) p = down ? { x: p.x + 40, y: p.y } : { x: p.x, y: p.y + 40 };
    return { x: Math.round(p.x), y: Math.round(p.y) };
  };

  /** Fits the view to the graph when a node at `p` would be outside it. */
  const keepInView = (p: { x: number; y: number }) => {
    const box = root.current?.querySelector('.editor-canvas')?.getBoundingClientRect();
    if (!box) return;
    const v = flow.getViewport();
    const left = -v.x / v.zoom;
    const top = -v.y / v.zoom;
    const inside = p.x >= left && p.y >= top && p.x + NEW_SIZE.width <= left + box.width / v.zoom && p.y + NEW_SIZE.height <= top + box.height / v.zoom;
    if (!inside) requestAnimationFrame(() => requestAnimationFrame(() => flow.fitView(FIT)));
  };

  const addNode = (kind: Kind) => {
    const image = modelList?.find((m) => m.category === 'image');
    const node = newNode(doc, kind, freeSpot(doc, kind), kind === 'prompt' ? image?.id : undefined);
    edit({ ...doc, nodes: [...doc.nodes, node] });
    setSelection({ type: 'node', id: node.id });
    keepInView(node.position);
    // The panel's first field, so that typing goes on where the node was made.
    requestAnimationFrame(() => root.current?.querySelector<HTMLElement>('.editor-panel textarea, .editor-panel input, .editor-panel select')?.focus());
  };

  const connect = (from: string, to: string): string | null => {
    const problem = connectionProblem(doc, from, to);
    if (problem) return problem;
    edit({ ...doc, edges: [...doc.edges, { from, to }] });
    setSelection({ type: 'edge', id: edgeKey({ from, to }) });
    return null;
  };

  const deleteSelected = () => {
    if (!selection) return;
    if (selection.type === 'node') {
      edit({ ...doc, nodes: doc.nodes.filter((n) => n.id !== selection.id), edges: doc.edges.filter((e) => e.from !== selection.id && e.to !== selection.id) });
    } else {
      edit({ ...doc, edges: doc.edges.filter((e) => edgeKey(e) !== selection.id) });
    }
    setSelection(null);
  };

  const step = (f: (h: History) => History) => {
    const next = f(hRef.current);
    setH(next);
    setDown(readsDown(next.present));
    // The selection may name a node the step took away.
    if (selection?.type === 'node' && !next.present.nodes.some((n) => n.id === selection.id)) setSelection(null);
    if (selection?.type === 'edge' && !next.present.edges.some((e) => edgeKey(e) === selection.id)) setSelection(null);
  };

  const autoLayout = async (asStep = true) => {
    const d = hRef.current.present;
    const sizes = new Map(d.nodes.map((n) => [n.id, measured.get(n.id) ?? { width: 180, height: 80 }]));
    // Left to right when that fits the canvas at full size, else top to bottom (a phone).
    const width = root.current?.querySelector('.editor-canvas')?.clientWidth ?? Infinity;
    const laid = await layoutGraph(sizes, d.edges, width, LAYOUT);
    const next = { ...hRef.current.present, nodes: hRef.current.present.nodes.map((n) => { const b = laid.nodes.get(n.id); return b ? { ...n, position: { x: Math.round(b.x), y: Math.round(b.y) } } : n; }) };
    setH((cur) => (asStep ? commit(cur, next) : { ...cur, present: next }));
    setDown(laid.direction === 'DOWN');
    requestAnimationFrame(() => flow.fitView(FIT));
    return next;
  };

  // A graph saved without positions (by the API or the CLI) is laid out once its nodes are measured.
  const initialized = useNodesInitialized();
  const laidOut = useRef(!initial.unplaced);
  useEffect(() => {
    if (!initialized || laidOut.current) return;
    laidOut.current = true;
    autoLayout(false).then((d) => saving.setBaseline(JSON.stringify(saveBody(d))), () => {});
  }, [initialized]);

  // Undo, redo and delete from the keyboard, anywhere in the editor but text fields (which keep their own undo).
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const inside = root.current?.contains(e.target as globalThis.Node) || e.target === document.body;
      if (!inside || isTextField(e.target) || leaving !== null || deleting) return;
      const mod = e.ctrlKey || e.metaKey;
      if (mod && e.key.toLowerCase() === 'z') {
        e.preventDefault();
        step(e.shiftKey ? redo : undo);
      } else if (mod && e.key.toLowerCase() === 'y') {
        e.preventDefault();
        step(redo);
      } else if ((e.key === 'Delete' || e.key === 'Backspace') && !mod && selection && !(e.target instanceof HTMLSelectElement)) {
        e.preventDefault();
        deleteSelected();
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  });

  /** Nodes moved on the canvas: a mouse drag is one undo step from where it began, a run of arrow-key moves another. */
  const moveNodes = (m: Map<string, { x: number; y: number }>, ended: boolean) => {
    const next = (d: Doc) => ({ ...d, nodes: d.nodes.map((n) => (m.has(n.id) ? { ...n, position: m.get(n.id)! } : n)) });
    if (dragBase.current) {
      const base = dragBase.current;
      setH((cur) => { const r = replace(cur, next(cur.present)); return ended ? stepFrom(r, base) : r; });
      if (ended) dragBase.current = null;
    } else {
      setH((cur) => commit(cur, next(cur.present), `move:${[...m.keys()].join(',')}`));
    }
    for (const nodeId of m.keys()) clearNodeProblems(nodeId);
  };

  const selectedNode = selection?.type === 'node' ? doc.nodes.find((n) => n.id === selection.id) : undefined;
  const selectedEdge = selection?.type === 'edge' ? doc.edges.find((e) => edgeKey(e) === selection.id) : undefined;
  const busy = save.busy !== null;
  const showNode = (nodeId: string) => {
    setSelection({ type: 'node', id: nodeId });
    root.current?.querySelector<HTMLElement>(`[data-node-id="${CSS.escape(nodeId)}"]`)?.focus();
  };

  return (
    <div class="editor-wrap" ref={root}>
      <EditorHead doc={doc} problems={problems} status={saving.status} canDelete={saving.id !== null}
        onName={(name) => edit({ ...doc, name }, 'name')} onDelete={() => setDeleting(true)} />
      <Toolbar doc={doc} selectedNode={selectedNode} selectedEdge={selectedEdge} busy={busy} canUndo={h.past.length > 0} canRedo={h.future.length > 0}
        edgeFormOpen={edgeForm.open} onAdd={addNode}
        onToggleEdgeForm={() => setEdgeForm({ open: !edgeForm.open, from: edgeForm.from || (selectedNode?.id ?? doc.nodes[0]?.id ?? ''), to: edgeForm.to || (doc.nodes[1]?.id ?? ''), problem: null })}
        onDelete={deleteSelected} onUndo={() => step(undo)} onRedo={() => step(redo)}
        onLayout={() => autoLayout().catch((error) => setSave({ ...save, error }))}
        onSave={() => saving.doSave()} onRun={saving.run} />
      {edgeForm.open && <EdgeForm doc={doc} form={edgeForm} setForm={setEdgeForm} onConnect={connect} />}
      <SaveNotices doc={doc} save={save} problems={problems} busy={busy} onReload={saving.reload} onOverwrite={() => saving.doSave(true)}
        onShowNode={showNode} onShowEdge={(key) => setSelection({ type: 'edge', id: key })} />
      <div class="editor">
        <Canvas doc={doc} problems={problems} selection={selection} measured={measured} previews={previews} down={down}
          onSelect={setSelection}
          // Functional: several batches of sizes can come before the next render, and a node passed
          // back without its size makes React Flow forget its handles (and stop drawing its edges).
          onMeasured={(sizes) => setMeasured((m) => new Map([...m, ...sizes]))}
          onMove={moveNodes}
          onDragStart={() => { dragBase.current = hRef.current.present; }}
          onConnect={(from, to) => { connect(from, to); }}
          canConnect={(from, to) => connectionProblem(hRef.current.present, from, to) === null} />
        <SidePanel doc={doc} selection={selection} models={modelList} problems={problems} client={client}
          onUpdateNode={updateNode} onSelect={setSelection}
          onImage={(nodeId, url, preview) => {
            setPreviews(new Map(previews).set(url, preview));
            updateNode(nodeId, { url }, 'url');
          }} />
      </div>
      <p id="canvas-help" class="muted small canvas-help">
        Drag a node to move it, drag from a node's output handle (on its right, or bottom) to another's input handle (left, or top) to connect them, scroll or pinch to zoom, drag the background to pan.
        From the keyboard: Tab to a node and press Enter to select it, arrow keys move it; with the canvas focused, arrow keys pan and + and − zoom.
        Ctrl+Z undoes, Shift+Ctrl+Z redoes, Delete removes the selected node or edge.
      </p>
      {leaving !== null && (
        <ConfirmDialog title="Leave without saving?" confirm="Leave" danger onCancel={() => setLeaving(null)} onConfirm={() => leave(leaving)}>
          <p>The changes to <strong>{doc.name || 'this workflow'}</strong> are not saved. Leaving drops them.</p>
        </ConfirmDialog>
      )}
      {deleting && (
        <ConfirmDialog title="Delete this workflow?" confirm="Delete workflow" danger busy={save.busy === 'delete'}
          onCancel={() => setDeleting(false)} onConfirm={() => saving.remove().then((gone) => !gone && setDeleting(false))}>
          <p><strong>{doc.name || 'This workflow'}</strong> leaves your workflows, and cannot be saved or run again. Its runs stay readable.</p>
        </ConfirmDialog>
      )}
    </div>
  );
}

/** The editor for a saved workflow (`workflowId`), or a new one (null). */
export function WorkflowEditor({ client, workflowId }: { client: KilnClient; workflowId: string | null }) {
  const [load] = useLoad<{ doc: Doc; version: number | null; unplaced: boolean }>(async (signal) => {
    if (workflowId === null) return { doc: { name: 'Untitled workflow', nodes: [], edges: [] }, version: null, unplaced: false };
    const w = await calls(client).get(workflowId, { signal });
    const { doc, unplaced } = fromGraph(w.name, w.graph);
    return { doc, version: w.version, unplaced };
  }, [client, workflowId]);
  // A new workflow has an id (and runs to list) once saved.
  const [savedId, setSavedId] = useState(workflowId);
  return (
    <Section title="Workflows" intro={<><a href="#/workflows">← All workflows</a>{savedId && <> · <a href={`#/workflows/${savedId}`}>Runs</a></>} · {savedId ? 'Edit workflow' : 'New workflow'}</>}>
      {load.state === 'loading' && <Loading what="the workflow" />}
      {load.state === 'error' && <Alert error={load.error} />}
      {load.state === 'ok' && (
        <ReactFlowProvider>
          <Editor client={client} workflowId={workflowId} initial={load.value} onCreated={setSavedId} />
        </ReactFlowProvider>
      )}
    </Section>
  );
}
