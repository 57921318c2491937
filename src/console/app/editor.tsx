// The workflow editor: a canvas (React Flow, through preact/compat) where nodes are dragged, the
// view panned and zoomed and edges drawn from an output handle to an input handle; a panel that
// edits the selected node; and a form for everything the mouse does (Add node, Add edge, Delete).
// It reads and writes only through the public API: GET/POST/PUT /workflows, GET /models,
// GET /generations (the image picker) and POST /workflows/{id}/runs. Loaded on demand (its own
// chunk), like the layout engine.

import {
  Background, Controls, Handle, MarkerType, Position, ReactFlow, ReactFlowProvider, useNodesInitialized, useReactFlow,
  type Connection, type Edge, type EdgeChange, type Node, type NodeChange, type NodeProps,
} from '@xyflow/react';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { KilnError, shortText, type KilnClient } from './api.ts';
import { layoutGraph } from './graph-layout.ts';
import { priceParts } from './playground.tsx';
import { Alert, go, Loading, Section, useLoad } from './ui.tsx';
import {
  ASPECT_RATIOS, commit, connectionProblem, edgeKey, FITTING, fromGraph, history, KIND_NAME, KINDS, LANGUAGES, newNode, nodeName,
  noProblems, OUTPUT_TYPES, placeProblems, PLATFORMS, problemCount, redo, replace, saveBody, stepFrom, takesInput, undo,
  type Doc, type DocNode, type History, type Kind, type OutputType, type Problems,
} from './workflow-doc.ts';

type Model = Awaited<ReturnType<KilnClient['models']['list']>>['data'][number];

type SaveBody = Parameters<KilnClient['workflows']['create']>[0];

/** POST/GET/PUT /workflows through the typed client; the editor's body is the stored graph format. */
const calls = (client: KilnClient) => ({
  create: (body: ReturnType<typeof saveBody>) => client.workflows.create(body as SaveBody),
  get: (id: string, opts?: { signal?: AbortSignal }) => client.workflows.get(id, opts),
  update: (id: string, body: ReturnType<typeof saveBody>, opts: { version?: number }) => client.workflows.update(id, body as SaveBody, opts),
});
type Workflow = Awaited<ReturnType<KilnClient['workflows']['get']>>;

/** A 400's `error.details` (JSON pointers into the body sent, and what is wrong there). */
const detailsOf = (e: unknown) => (e instanceof KilnError ? e.details : []);

type NodeData = { node: DocNode; problems: Array<{ field: string; message: string }>; preview?: string; down: boolean };
type KNode = Node<NodeData, 'kiln'>;

const isTextField = (t: EventTarget | null) =>
  t instanceof HTMLTextAreaElement || (t instanceof HTMLInputElement && !['button', 'checkbox', 'radio', 'submit'].includes(t.type)) || (t instanceof HTMLElement && t.isContentEditable);

/** A one-line summary of what the node holds, under its name on the canvas. */
function summary(n: DocNode): string {
  switch (n.kind) {
    case 'text': return n.text ? shortText(n.text, 48) : 'No text yet';
    case 'image': return n.url ? shortText(n.url.replace(/^data:([^;,]+)[^,]*,.*$/, 'data: $1'), 40) : 'No image yet';
    case 'prompt': return n.prompt ? shortText(n.prompt, 48) : 'No prompt yet';
    case 'output': return n.platform ? `for ${n.platform}` : 'Result';
  }
}

function KilnNode({ data, selected }: NodeProps<KNode>) {
  const n = data.node;
  const bad = data.problems.length > 0;
  return (
    <div class={`enode k-${n.kind}${selected ? ' picked' : ''}${bad ? ' invalid' : ''}`}>
      {takesInput(n.kind) && <Handle type="target" position={data.down ? Position.Top : Position.Left} />}
      <span class="node-kind">{KIND_NAME[n.kind]}{n.kind === 'prompt' && n.output ? ` · ${n.output}` : ''}</span>
      <span class="node-title">{nodeName(n)}</span>
      {data.preview && <img class="enode-thumb" src={data.preview} alt="" />}
      <span class="node-sub">{summary(n)}</span>
      {n.kind === 'prompt' && <span class="node-model">{n.output === 'video' ? 'skipped at run time' : n.model ?? 'default model'}</span>}
      {bad && <span class="enode-problem">{data.problems[0]!.message}{data.problems.length > 1 ? ` (+${data.problems.length - 1} more)` : ''}</span>}
      <Handle type="source" position={data.down ? Position.Bottom : Position.Right} />
    </div>
  );
}

const NODE_TYPES = { kiln: KilnNode };

/** A new node's size until it is measured (nodes are 184 px wide; the stylesheet says so). */
const NEW_SIZE = { width: 184, height: 90 };
const HANDLE = 12;

/**
 * Where a node's handles are (as the stylesheet puts them: 12 px, centred on the left and right
 * borders, or on the top and bottom ones when the graph reads top to bottom). Given to React Flow
 * with each node so that it always knows them: measured from the page only, it lost them when a
 * render passed a node back while it was measuring it, and then stopped drawing its edges.
 */
function handlesOf(kind: Kind, size: { width: number; height: number }, down: boolean) {
  const h = HANDLE / 2;
  const input = down ? { position: Position.Top, x: size.width / 2 - h, y: -h } : { position: Position.Left, x: -h, y: size.height / 2 - h };
  const output = down ? { position: Position.Bottom, x: size.width / 2 - h, y: size.height - h } : { position: Position.Right, x: size.width - h, y: size.height / 2 - h };
  return [
    ...(takesInput(kind) ? [{ type: 'target' as const, ...input, width: HANDLE, height: HANDLE }] : []),
    { type: 'source' as const, ...output, width: HANDLE, height: HANDLE },
  ];
}

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
 * An edge's arrowhead, sized in pixels whatever the stroke. React Flow names a marker after its
 * options, and a colour with var() in it breaks that reference: `tone` is a word the stylesheet
 * finds in the marker's id and colours it by (an inline colour that is no colour is ignored).
 */
const arrow = (tone: 'plain' | 'picked' | 'invalid') => ({ type: MarkerType.ArrowClosed, width: 22, height: 22, markerUnits: 'userSpaceOnUse', color: tone });

/** The Add node button and its menu (Text, Image, Prompt, Output): arrow keys move, Escape closes. */
function AddNodeMenu({ onAdd }: { onAdd: (kind: Kind) => void }) {
  const [open, setOpen] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  const menu = useRef<HTMLUListElement>(null);
  const items = () => [...(menu.current?.querySelectorAll<HTMLButtonElement>('[role="menuitem"]') ?? [])];
  useEffect(() => {
    if (!open) return;
    items()[0]?.focus();
    const away = (e: PointerEvent) => {
      if (!menu.current?.contains(e.target as globalThis.Node) && !button.current?.contains(e.target as globalThis.Node)) setOpen(false);
    };
    document.addEventListener('pointerdown', away);
    return () => document.removeEventListener('pointerdown', away);
  }, [open]);
  const close = () => {
    setOpen(false);
    button.current?.focus();
  };
  const onKey = (e: KeyboardEvent) => {
    const all = items();
    const i = all.indexOf(document.activeElement as HTMLButtonElement);
    if (e.key === 'Escape') { e.preventDefault(); close(); }
    else if (e.key === 'ArrowDown') { e.preventDefault(); all[(i + 1) % all.length]?.focus(); }
    else if (e.key === 'ArrowUp') { e.preventDefault(); all[(i - 1 + all.length) % all.length]?.focus(); }
    else if (e.key === 'Home') { e.preventDefault(); all[0]?.focus(); }
    else if (e.key === 'End') { e.preventDefault(); all[all.length - 1]?.focus(); }
    else if (e.key === 'Tab') setOpen(false);
  };
  return (
    <div class="menu-wrap">
      <button ref={button} type="button" class="btn small" aria-haspopup="menu" aria-expanded={open} aria-controls="add-node-menu"
        onClick={() => setOpen(!open)} onKeyDown={(e) => { if (e.key === 'ArrowDown' && !open) { e.preventDefault(); setOpen(true); } }}>
        Add node <span aria-hidden="true">▾</span>
      </button>
      {open && (
        <ul id="add-node-menu" ref={menu} class="menu" role="menu" aria-label="Add node" onKeyDown={onKey}>
          {KINDS.map((k) => (
            <li key={k} role="none">
              <button type="button" role="menuitem" tabIndex={-1} onClick={() => { setOpen(false); onAdd(k); }}>{KIND_NAME[k]}</button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

type Selection = { type: 'node' | 'edge'; id: string } | null;

/** Field ids of the panel, by the field a validation pointer names. */
const FIELD_ID: Record<string, string> = { text: 'nf-text', url: 'nf-url', output: 'nf-output', prompt: 'nf-prompt', model: 'nf-model', label: 'nf-label', aspectRatio: 'nf-aspect', targetLanguage: 'nf-lang', platform: 'nf-platform' };

function FieldProblem({ id, problems, field }: { id: string; problems: Array<{ field: string; message: string }>; field: string }) {
  const mine = problems.filter((p) => p.field === field);
  if (!mine.length) return null;
  return <p class="field-problem" id={`${id}-problem`}>{mine.map((p) => p.message).join('; ')}</p>;
}

function ImagePicker({ client, onPick, current }: { client: KilnClient; onPick: (url: string, preview: string) => void; current: string }) {
  const [open, setOpen] = useState(false);
  return (
    <div class="picker">
      <button type="button" class="btn small ghost" aria-expanded={open} aria-controls="image-picker" onClick={() => setOpen(!open)}>
        {open ? 'Hide your images' : 'Choose from your images'}
      </button>
      {open && <ImageGrid client={client} onPick={onPick} current={current} />}
    </div>
  );
}

/** The URL an image node keeps for a generated image: its store URL without the signature (the server resolves it to the owner's store path). */
export const storeUrl = (signed: string) => {
  try {
    const u = new URL(signed);
    return `${u.origin}${u.pathname}`;
  } catch {
    return signed;
  }
};

function ImageGrid({ client, onPick, current }: { client: KilnClient; onPick: (url: string, preview: string) => void; current: string }) {
  const [list] = useLoad((signal) => client.generations.list({ type: 'image', status: 'completed', limit: 24 }, { signal }), [client]);
  const images = list.state === 'ok'
    ? list.value.data.flatMap((g) => (g.result?.type === 'image' && g.result.url ? [{ id: g.id, url: g.result.url, prompt: g.prompt }] : []))
    : [];
  return (
    <div id="image-picker">
      {list.state === 'loading' && <Loading what="your images" />}
      {list.state === 'error' && <Alert error={list.error} />}
      {list.state === 'ok' && images.length === 0 && <p class="muted small">No generated images yet: make one in the Playground.</p>}
      {images.length > 0 && (
        <ul class="picker-grid" aria-label="Your generated images">
          {images.map((im) => {
            const url = storeUrl(im.url);
            const name = im.prompt ? shortText(im.prompt, 60) : `image ${im.id.slice(-8)}`;
            return (
              <li key={im.id}>
                <button type="button" class="picker-item" aria-pressed={current === url} aria-label={`Use image: ${name}`} title={name} onClick={() => onPick(url, im.url)}>
                  <img src={im.url} alt="" loading="lazy" />
                </button>
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}

function NodePanel({ node, doc, models, problems, client, onChange, onPickEdge, onImage }: {
  node: DocNode; doc: Doc; models: Model[] | null; problems: Array<{ field: string; message: string }>; client: KilnClient;
  onChange: (patch: Partial<DocNode>, field: string) => void; onPickEdge: (key: string) => void; onImage: (url: string, preview: string) => void;
}) {
  const described = (field: string, hint?: string) => {
    const ids = [problems.some((p) => p.field === field) ? `${FIELD_ID[field]}-problem` : '', hint ?? ''].filter(Boolean).join(' ');
    return { 'aria-invalid': problems.some((p) => p.field === field) || undefined, 'aria-describedby': ids || undefined };
  };
  const value = (e: Event) => (e.target as HTMLInputElement).value;
  const output = (node.output ?? 'image') as OutputType;
  const fitting = models?.filter((m) => FITTING[output].includes(m.category)) ?? [];
  const chosen = models?.find((m) => m.id === node.model);
  const inputs = doc.edges.filter((e) => e.to === node.id);
  const outputs = doc.edges.filter((e) => e.from === node.id);
  const byId = new Map(doc.nodes.map((n) => [n.id, n]));
  const general = problems.filter((p) => !FIELD_ID[p.field]);
  return (
    <>
      <p class="panel-sub"><span class="badge">{KIND_NAME[node.kind]}</span> <code>{node.id}</code></p>
      {general.length > 0 && <p class="field-problem">{general.map((p) => p.message).join('; ')}</p>}
      {node.kind === 'text' && (
        <div class="field">
          <label for="nf-text">Text</label>
          <textarea id="nf-text" rows={5} value={node.text ?? ''} onInput={(e) => onChange({ text: value(e) }, 'text')} {...described('text')} />
          <FieldProblem id="nf-text" field="text" problems={problems} />
        </div>
      )}
      {node.kind === 'image' && (
        <div class="field">
          <label for="nf-url">Image URL</label>
          <input id="nf-url" type="text" inputMode="url" spellcheck={false} autoComplete="off" value={node.url ?? ''} placeholder="https://…, seed/…, or pick one below"
            onInput={(e) => onChange({ url: value(e) }, 'url')} {...described('url', 'nf-url-hint')} />
          <FieldProblem id="nf-url" field="url" problems={problems} />
          <p class="hint" id="nf-url-hint">An https:// URL, a data: URI, a seed/… path, or one of your generated images.</p>
          <ImagePicker client={client} current={node.url ?? ''} onPick={onImage} />
        </div>
      )}
      {node.kind === 'prompt' && (
        <>
          <div class="field">
            <label for="nf-output">Output type</label>
            <select id="nf-output" value={output} onChange={(e) => {
              const next = value(e) as OutputType;
              const fits = models?.filter((m) => FITTING[next].includes(m.category)) ?? [];
              const keep = node.model && fits.some((m) => m.id === node.model);
              onChange({ output: next, model: next === 'video' ? undefined : keep ? node.model : fits[0]?.id, ...(next === 'code' && !node.targetLanguage ? { targetLanguage: 'tsx' } : {}) }, 'output');
            }} {...described('output')}>
              {OUTPUT_TYPES.map((t) => <option key={t} value={t}>{t}</option>)}
            </select>
            <FieldProblem id="nf-output" field="output" problems={problems} />
          </div>
          <div class="field">
            <label for="nf-prompt">Prompt</label>
            <textarea id="nf-prompt" rows={5} value={node.prompt ?? ''} onInput={(e) => onChange({ prompt: value(e) }, 'prompt')} {...described('prompt')} />
            <FieldProblem id="nf-prompt" field="prompt" problems={problems} />
          </div>
          <div class="field">
            <label for="nf-model">Model</label>
            {models === null && <Loading what="models" />}
            <select id="nf-model" value={node.model ?? ''} disabled={output === 'video' || models === null} onChange={(e) => onChange({ model: value(e) || undefined }, 'model')}
              {...described('model', 'nf-model-hint')}>
              {output === 'video' && <option value="">None: video outputs are skipped</option>}
              {output !== 'video' && (node.model === undefined || !fitting.some((m) => m.id === node.model)) && (
                <option value={node.model ?? ''}>{node.model ? `${node.model} (cannot make ${output})` : 'Default model'}</option>
              )}
              {output !== 'video' && fitting.map((m) => <option key={m.id} value={m.id}>{m.name} · {priceParts(m).join(' · ')}</option>)}
            </select>
            <FieldProblem id="nf-model" field="model" problems={problems} />
            <p class="hint" id="nf-model-hint">
              {output === 'video' ? 'Video prompts are skipped when the workflow runs.'
                : chosen ? <><code>{chosen.id}</code> · billed {priceParts(chosen).join(' · ')}</>
                : `Models that can make ${output} output, with the price you are billed.`}
            </p>
          </div>
          {output === 'image' && (
            <div class="field">
              <label for="nf-aspect">Aspect ratio</label>
              <select id="nf-aspect" value={node.aspectRatio ?? ''} onChange={(e) => onChange({ aspectRatio: value(e) || undefined }, 'aspectRatio')} {...described('aspectRatio')}>
                <option value="">Model default</option>
                {ASPECT_RATIOS.map((a) => <option key={a} value={a}>{a}</option>)}
              </select>
            </div>
          )}
          {output === 'code' && (
            <div class="field">
              <label for="nf-lang">Language</label>
              <select id="nf-lang" value={node.targetLanguage ?? ''} onChange={(e) => onChange({ targetLanguage: value(e) || undefined }, 'targetLanguage')} {...described('targetLanguage')}>
                <option value="">Model default</option>
                {LANGUAGES.map((l) => <option key={l} value={l}>{l}</option>)}
              </select>
            </div>
          )}
        </>
      )}
      <div class="field">
        <label for="nf-label">Label</label>
        <input id="nf-label" type="text" autoComplete="off" value={node.label ?? ''} placeholder={node.id} onInput={(e) => onChange({ label: value(e) }, 'label')}
          {...described('label', 'nf-label-hint')} />
        <FieldProblem id="nf-label" field="label" problems={problems} />
        <p class="hint" id="nf-label-hint">{node.kind === 'output' ? 'Names this result in runs.' : 'Names the node on the canvas and for the prompts it feeds.'}</p>
      </div>
      {node.kind === 'output' && (
        <div class="field">
          <label for="nf-platform">Platform</label>
          <select id="nf-platform" value={node.platform ?? ''} onChange={(e) => onChange({ platform: value(e) || undefined }, 'platform')} {...described('platform')}>
            <option value="">None</option>
            {PLATFORMS.map((p) => <option key={p} value={p}>{p}</option>)}
          </select>
        </div>
      )}
      {(inputs.length > 0 || outputs.length > 0) && (
        <div class="connections">
          <h3 class="small-title">Edges</h3>
          <ul>
            {inputs.map((e) => <li key={edgeKey(e)}><button type="button" class="linkish" onClick={() => onPickEdge(edgeKey(e))}>from {nodeName(byId.get(e.from) ?? { id: e.from })}</button></li>)}
            {outputs.map((e) => <li key={edgeKey(e)}><button type="button" class="linkish" onClick={() => onPickEdge(edgeKey(e))}>to {nodeName(byId.get(e.to) ?? { id: e.to })}</button></li>)}
          </ul>
        </div>
      )}
    </>
  );
}

interface SaveState {
  busy: 'save' | 'run' | 'reload' | 'overwrite' | null;
  /** Refused with 412: the version the server has now, when read. */
  conflict: boolean;
  error?: unknown;
  note?: string;
}

function Editor({ client, workflowId, initial, onCreated }: {
  client: KilnClient; workflowId: string | null; initial: { doc: Doc; version: number | null; unplaced: boolean }; onCreated: (id: string) => void;
}) {
  const flow = useReactFlow();
  const [id, setId] = useState<string | null>(workflowId);
  const [version, setVersion] = useState<number | null>(initial.version);
  const [h, setH] = useState<History>(() => history(initial.doc));
  const hRef = useRef(h);
  hRef.current = h;
  const doc = h.present;
  const [baseline, setBaseline] = useState(() => JSON.stringify(saveBody(initial.doc)));
  const [selection, setSelection] = useState<Selection>(null);
  const [measured, setMeasured] = useState<Map<string, { width: number; height: number }>>(new Map());
  const [problems, setProblems] = useState<Problems>(noProblems);
  const [save, setSave] = useState<SaveState>({ busy: null, conflict: false });
  const [edgeForm, setEdgeForm] = useState<{ open: boolean; from: string; to: string; problem: string | null }>({ open: false, from: '', to: '', problem: null });
  const [previews, setPreviews] = useState<Map<string, string>>(new Map());
  // Handles on the left and right, or on the top and bottom of the nodes when the graph reads top
  // to bottom (as Auto-layout lays it out on a narrow canvas).
  const [down, setDown] = useState(() => readsDown(initial.doc));
  const [models] = useLoad((signal) => client.models.list({ signal }), [client]);
  const modelList = models.state === 'ok' ? models.value.data : null;
  const dragBase = useRef<Doc | null>(null);
  const root = useRef<HTMLDivElement>(null);
  const dirty = JSON.stringify(saveBody(doc)) !== baseline || id === null;

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
    if (!inside) requestAnimationFrame(() => requestAnimationFrame(() => flow.fitView({ padding: 0.15, maxZoom: 1.1 })));
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
    requestAnimationFrame(() => flow.fitView({ padding: 0.15, maxZoom: 1.1 }));
    return next;
  };

  // A graph saved without positions (by the API or the CLI) is laid out once its nodes are measured.
  const initialized = useNodesInitialized();
  const laidOut = useRef(!initial.unplaced);
  useEffect(() => {
    if (!initialized || laidOut.current) return;
    laidOut.current = true;
    autoLayout(false).then((d) => setBaseline(JSON.stringify(saveBody(d))), () => {});
  }, [initialized]);

  // Undo, redo and delete from the keyboard, anywhere in the editor but text fields (which keep their own undo).
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const inside = root.current?.contains(e.target as globalThis.Node) || e.target === document.body;
      if (!inside || isTextField(e.target)) return;
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

  const onNodesChange = (changes: NodeChange<KNode>[]) => {
    let sizes: Array<[string, { width: number; height: number }]> | null = null;
    let moved: Map<string, { x: number; y: number }> | null = null;
    let ended = false;
    for (const c of changes) {
      if (c.type === 'dimensions' && c.dimensions) (sizes ??= []).push([c.id, c.dimensions]);
      else if (c.type === 'position' && c.position) {
        (moved ??= new Map()).set(c.id, c.position);
        if (!c.dragging) ended = true;
      } else if (c.type === 'select') {
        setSelection((s) => (c.selected ? { type: 'node', id: c.id } : s?.type === 'node' && s.id === c.id ? null : s));
      }
    }
    // Functional: several batches of sizes can come before the next render, and a node passed
    // back without its size makes React Flow forget its handles (and stop drawing its edges).
    if (sizes) {
      const add = sizes;
      setMeasured((m) => new Map([...m, ...add]));
    }
    if (moved) {
      const m = moved;
      const next = (d: Doc) => ({ ...d, nodes: d.nodes.map((n) => (m.has(n.id) ? { ...n, position: m.get(n.id)! } : n)) });
      if (dragBase.current) {
        // A mouse drag: one undo step from where it began, taken when it ends.
        const base = dragBase.current;
        setH((cur) => { const r = replace(cur, next(cur.present)); return ended ? stepFrom(r, base) : r; });
        if (ended) dragBase.current = null;
      } else {
        // Arrow keys on a selected node: a run of presses is one step.
        setH((cur) => commit(cur, next(cur.present), `move:${[...m.keys()].join(',')}`));
      }
      for (const nodeId of m.keys()) clearNodeProblems(nodeId);
    }
  };

  const onEdgesChange = (changes: EdgeChange<Edge>[]) => {
    for (const c of changes) {
      if (c.type === 'select') setSelection((s) => (c.selected ? { type: 'edge', id: c.id } : s?.type === 'edge' && s.id === c.id ? null : s));
    }
  };

  const rfNodes = useMemo<KNode[]>(() => doc.nodes.map((n) => ({
    id: n.id,
    type: 'kiln',
    position: n.position,
    data: { node: n, problems: problems.nodes.get(n.id) ?? [], preview: n.kind === 'image' ? previewOf(n.url, previews) : undefined, down },
    selected: selection?.type === 'node' && selection.id === n.id,
    measured: measured.get(n.id),
    handles: handlesOf(n.kind, measured.get(n.id) ?? NEW_SIZE, down),
    ariaLabel: nodeName(n),
    domAttributes: { 'data-node-id': n.id, 'data-kind': n.kind, ...(problems.nodes.has(n.id) ? { 'data-invalid': 'true' } : {}) } as KNode['domAttributes'],
  })), [doc.nodes, problems, selection, measured, previews, down]);

  const names = new Map(doc.nodes.map((n) => [n.id, nodeName(n)]));
  const rfEdges = useMemo<Edge[]>(() => doc.edges.map((e) => {
    const key = edgeKey(e);
    const bad = problems.edges.get(key);
    return {
      id: key,
      source: e.from,
      target: e.to,
      selected: selection?.type === 'edge' && selection.id === key,
      markerEnd: arrow(bad ? 'invalid' : selection?.type === 'edge' && selection.id === key ? 'picked' : 'plain'),
      className: bad ? 'invalid' : undefined,
      label: bad ? shortText(bad[0]!, 48) : undefined,
      ariaLabel: `Edge from ${names.get(e.from) ?? e.from} to ${names.get(e.to) ?? e.to}${bad ? `: ${bad.join('; ')}` : ''}`,
      domAttributes: { 'data-edge': key, 'data-from': e.from, 'data-to': e.to, ...(bad ? { 'data-invalid': 'true' } : {}) } as Edge['domAttributes'],
    };
  }), [doc.edges, doc.nodes, problems, selection]);

  /** Saves (create, or replace over the version read); true when saved. `force`: over whatever version the server has now. */
  const doSave = async (force = false): Promise<string | null> => {
    const body = saveBody(doc);
    const sent = { nodes: body.graph.nodes.map((n) => n.id as string), edges: body.graph.edges.map(edgeKey) };
    setSave({ busy: force ? 'overwrite' : 'save', conflict: false });
    try {
      let saved: Workflow;
      if (id === null) saved = await calls(client).create(body);
      else {
        const over = force ? (await calls(client).get(id)).version : version ?? undefined;
        saved = await calls(client).update(id, body, { version: over });
      }
      if (id === null) {
        // The editor stays as it is (its undo history too); the address becomes the workflow's.
        window.history.replaceState(null, '', `#/workflows/${saved.id}/edit`);
        setId(saved.id);
        onCreated(saved.id);
      }
      setVersion(saved.version);
      setBaseline(JSON.stringify(body));
      setProblems(noProblems());
      setSave({ busy: null, conflict: false, note: `Saved: version ${saved.version}.` });
      return saved.id;
    } catch (error) {
      const details = detailsOf(error);
      if (error instanceof KilnError && error.status === 412) {
        setSave({ busy: null, conflict: true });
      } else if (error instanceof KilnError && error.status === 400 && details.length) {
        setProblems(placeProblems(details, sent));
        setSave({ busy: null, conflict: false });
      } else {
        setSave({ busy: null, conflict: false, error });
      }
      return null;
    }
  };

  const reload = async () => {
    if (id === null) return;
    setSave({ busy: 'reload', conflict: false });
    try {
      const w = await calls(client).get(id);
      const { doc: fresh } = fromGraph(w.name, w.graph);
      setH((cur) => commit(cur, fresh));
      setDown(readsDown(fresh));
      setBaseline(JSON.stringify(saveBody(fresh)));
      setVersion(w.version);
      setProblems(noProblems());
      setSelection(null);
      setSave({ busy: null, conflict: false, note: `Reloaded version ${w.version}.` });
    } catch (error) {
      setSave({ busy: null, conflict: true, error });
    }
  };

  const run = async () => {
    const saved = dirty ? await doSave() : id;
    if (!saved) return;
    setSave({ busy: 'run', conflict: false });
    try {
      const r = await client.runs.start(saved);
      go(`workflows/${saved}/runs/${r.id}`);
    } catch (error) {
      setSave({ busy: null, conflict: false, error });
    }
  };

  // Arrow keys pan the view and + / − zoom while the canvas itself has focus (its nodes move with arrows when selected).
  const onCanvasKey = (e: KeyboardEvent) => {
    if (e.target !== e.currentTarget) return;
    const v = flow.getViewport();
    const d = e.shiftKey ? 200 : 60;
    const pan: Record<string, [number, number]> = { ArrowLeft: [d, 0], ArrowRight: [-d, 0], ArrowUp: [0, d], ArrowDown: [0, -d] };
    if (pan[e.key]) {
      e.preventDefault();
      flow.setViewport({ ...v, x: v.x + pan[e.key]![0], y: v.y + pan[e.key]![1] });
    } else if (e.key === '+' || e.key === '=') { e.preventDefault(); flow.zoomIn(); }
    else if (e.key === '-' || e.key === '_') { e.preventDefault(); flow.zoomOut(); }
    else if (e.key === '0') { e.preventDefault(); flow.fitView({ padding: 0.15, maxZoom: 1.1 }); }
  };

  const selectedNode = selection?.type === 'node' ? doc.nodes.find((n) => n.id === selection.id) : undefined;
  const selectedEdge = selection?.type === 'edge' ? doc.edges.find((e) => edgeKey(e) === selection.id) : undefined;
  const count = problemCount(problems);
  const busy = save.busy !== null;
  const nodeOptions = doc.nodes.map((n) => <option key={n.id} value={n.id}>{nodeName(n)} ({KIND_NAME[n.kind]})</option>);
  const showNode = (nodeId: string) => {
    setSelection({ type: 'node', id: nodeId });
    root.current?.querySelector<HTMLElement>(`[data-node-id="${CSS.escape(nodeId)}"]`)?.focus();
  };

  return (
    <div class="editor-wrap" ref={root}>
      <div class="editor-head">
        <div class="field editor-name">
          <label for="wf-name">Workflow name</label>
          <input id="wf-name" type="text" autoComplete="off" value={doc.name} maxLength={200}
            onInput={(e) => edit({ ...doc, name: (e.target as HTMLInputElement).value }, 'name')}
            aria-invalid={problems.name.length > 0 || undefined} aria-describedby={problems.name.length ? 'wf-name-problem' : undefined} />
          {problems.name.length > 0 && <p class="field-problem" id="wf-name-problem">{problems.name.join('; ')}</p>}
        </div>
        <p class="muted small editor-state" role="status">
          {save.busy === 'save' || save.busy === 'overwrite' ? 'Saving…' : save.busy === 'run' ? 'Starting a run…'
            : save.note && !dirty ? save.note : id === null ? 'Not saved yet.' : dirty ? `Unsaved changes (version ${version} is saved).` : `Saved: version ${version}.`}
        </p>
      </div>
      <div class="editor-tools">
        <AddNodeMenu onAdd={addNode} />
        <button type="button" class="btn small" aria-expanded={edgeForm.open} aria-controls="edge-form"
          onClick={() => setEdgeForm({ open: !edgeForm.open, from: edgeForm.from || (selectedNode?.id ?? doc.nodes[0]?.id ?? ''), to: edgeForm.to || (doc.nodes[1]?.id ?? ''), problem: null })}>
          Add edge
        </button>
        <button type="button" class="btn small danger" disabled={!selection} onClick={deleteSelected} aria-describedby="delete-what">Delete</button>
        <span id="delete-what" class="sr-only">
          {selectedNode ? `Deletes the node ${nodeName(selectedNode)} and its edges` : selectedEdge ? `Deletes the edge from ${names.get(selectedEdge.from)} to ${names.get(selectedEdge.to)}` : 'Select a node or an edge first'}
        </span>
        <span class="tool-sep" aria-hidden="true" />
        <button type="button" class="btn small ghost" disabled={!h.past.length} onClick={() => step(undo)} aria-keyshortcuts="Control+Z Meta+Z">Undo</button>
        <button type="button" class="btn small ghost" disabled={!h.future.length} onClick={() => step(redo)} aria-keyshortcuts="Shift+Control+Z Shift+Meta+Z Control+Y">Redo</button>
        <button type="button" class="btn small ghost" disabled={!doc.nodes.length} onClick={() => autoLayout().catch((error) => setSave({ ...save, error }))}>Auto-layout</button>
        <span class="tool-grow" />
        <button type="button" class="btn small" disabled={busy} onClick={() => doSave()}>Save</button>
        <button type="button" class="btn small primary" disabled={busy || !doc.nodes.length} onClick={run}>Run</button>
      </div>
      {edgeForm.open && (
        <form id="edge-form" class="edge-form" aria-label="Add edge" onSubmit={(e) => {
          e.preventDefault();
          const problem = connect(edgeForm.from, edgeForm.to);
          setEdgeForm({ ...edgeForm, problem });
        }}>
          <div class="field">
            <label for="edge-from">From</label>
            <select id="edge-from" value={edgeForm.from} onChange={(e) => setEdgeForm({ ...edgeForm, from: (e.target as HTMLSelectElement).value, problem: null })}>{nodeOptions}</select>
          </div>
          <div class="field">
            <label for="edge-to">To</label>
            <select id="edge-to" value={edgeForm.to} onChange={(e) => setEdgeForm({ ...edgeForm, to: (e.target as HTMLSelectElement).value, problem: null })}>{nodeOptions}</select>
          </div>
          <button type="submit" class="btn small primary" disabled={doc.nodes.length < 2}>Connect</button>
          {edgeForm.problem && <p class="field-problem edge-problem" role="alert">{edgeForm.problem}</p>}
        </form>
      )}
      {save.conflict && (
        <div class="notice error conflict" role="alert">
          <p><strong>This workflow was changed elsewhere</strong> since it was opened here, so it was not saved.
            Reload it (your changes here are lost), or overwrite it with yours.</p>
          <div class="row">
            <button type="button" class="btn small" disabled={busy} onClick={reload}>Reload</button>
            <button type="button" class="btn small danger" disabled={busy} onClick={() => doSave(true)}>Overwrite</button>
          </div>
        </div>
      )}
      {save.error !== undefined && <Alert error={save.error} />}
      {count > 0 && (
        <div class="notice error problems" role="alert">
          <p><strong>Not saved: {count === 1 ? 'one problem' : `${count} problems`}.</strong></p>
          <ul>
            {[...problems.nodes].flatMap(([nodeId, list]) => list.map((p, i) => (
              <li key={`${nodeId}-${i}`}><button type="button" class="linkish" onClick={() => showNode(nodeId)}>{names.get(nodeId) ?? nodeId}</button>: {p.message}</li>
            )))}
            {[...problems.edges].flatMap(([key, list]) => list.map((m, i) => {
              const e = doc.edges.find((x) => edgeKey(x) === key);
              return <li key={`${key}-${i}`}><button type="button" class="linkish" onClick={() => setSelection({ type: 'edge', id: key })}>Edge {e ? `${names.get(e.from)} → ${names.get(e.to)}` : key}</button>: {m}</li>;
            }))}
            {problems.name.map((m, i) => <li key={`name-${i}`}>Workflow name: {m}</li>)}
            {problems.general.map((m, i) => <li key={`g-${i}`}>{m}</li>)}
          </ul>
        </div>
      )}
      <div class="editor">
        <div class="editor-canvas" tabIndex={0} role="region" aria-label="Canvas" aria-describedby="canvas-help" onKeyDown={onCanvasKey}>
          <ReactFlow<KNode, Edge>
            nodes={rfNodes}
            edges={rfEdges}
            nodeTypes={NODE_TYPES}
            onNodesChange={onNodesChange}
            onEdgesChange={onEdgesChange}
            onConnect={(c: Connection) => { connect(c.source, c.target); }}
            isValidConnection={(c) => connectionProblem(hRef.current.present, c.source, c.target) === null}
            onNodeDragStart={() => { dragBase.current = hRef.current.present; }}
            deleteKeyCode={null}
            selectionKeyCode={null}
            multiSelectionKeyCode={null}
            fitView
            fitViewOptions={{ padding: 0.15, maxZoom: 1.1 }}
            minZoom={0.2}
            maxZoom={2}
            colorMode="system"
            proOptions={{ hideAttribution: false }}
          >
            <Background gap={20} />
            <Controls showInteractive={false} position="bottom-left" />
          </ReactFlow>
          {doc.nodes.length === 0 && <p class="canvas-empty muted">Add a node to start: a Text or Image input, a Prompt, then an Output.</p>}
        </div>
        <section class="card editor-panel" aria-labelledby="panel-title">
          <h2 class="card-title" id="panel-title">{selectedEdge ? 'Edge' : 'Node'}</h2>
          {selectedNode && (
            <NodePanel key={selectedNode.id} node={selectedNode} doc={doc} models={modelList} problems={problems.nodes.get(selectedNode.id) ?? []} client={client}
              onChange={(patch, field) => updateNode(selectedNode.id, patch, field)}
              onPickEdge={(key) => setSelection({ type: 'edge', id: key })}
              onImage={(url, preview) => {
                setPreviews(new Map(previews).set(url, preview));
                updateNode(selectedNode.id, { url }, 'url');
              }} />
          )}
          {selectedEdge && (
            <>
              <p>From <strong>{names.get(selectedEdge.from)}</strong> to <strong>{names.get(selectedEdge.to)}</strong>.</p>
              {problems.edges.get(edgeKey(selectedEdge))?.map((m, i) => <p key={i} class="field-problem">{m}</p>)}
              <p class="muted small">Delete removes it. Select a node to edit it.</p>
            </>
          )}
          {!selection && <p class="muted">Select a node on the canvas (click it, or Tab to it and press Enter) to edit it here, or add one with Add node.</p>}
        </section>
      </div>
      <p id="canvas-help" class="muted small canvas-help">
        Drag a node to move it, drag from a node's output handle (on its right, or bottom) to another's input handle (left, or top) to connect them, scroll or pinch to zoom, drag the background to pan.
        From the keyboard: Tab to a node and press Enter to select it, arrow keys move it; with the canvas focused, arrow keys pan and + and − zoom.
        Ctrl+Z undoes, Shift+Ctrl+Z redoes, Delete removes the selected node or edge.
      </p>
    </div>
  );
}

/** A picture for an image node on the canvas: a data: URI as is, a generated image by its signed URL (when the picker has it). */
function previewOf(url: string | undefined, previews: Map<string, string>): string | undefined {
  if (!url) return undefined;
  if (previews.has(url)) return previews.get(url);
  if (/^data:image\//i.test(url)) return url;
  return undefined;
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

