// The workflow editor's document, without any UI: the graph as the API stores it (docs/api.md,
// "Workflows"; plus each node's canvas `position`, an extra property the API keeps as sent), what
// the editor may connect, the request body it saves, where the server's validation `details`
// point, and the undo history.

export type Kind = 'text' | 'image' | 'prompt' | 'output';
export type OutputType = 'image' | 'code' | 'screen' | 'design' | 'video';

export const KINDS: Kind[] = ['text', 'image', 'prompt', 'output'];
export const KIND_NAME: Record<Kind, string> = { text: 'Text', image: 'Image', prompt: 'Prompt', output: 'Output' };
export const OUTPUT_TYPES: OutputType[] = ['image', 'code', 'screen', 'design', 'video'];
export const ASPECT_RATIOS = ['1:1', '16:9', '9:16', '4:3', '3:4', '3:2', '2:3'] as const;
export const LANGUAGES = ['tsx', 'jsx', 'typescript', 'javascript', 'css', 'svg', 'json', 'markdown', 'mdx', 'glsl', 'text'] as const;
export const PLATFORMS = ['x', 'linkedin', 'instagram', 'facebook', 'threads', 'tiktok'] as const;

/** Which model categories (GET /models `category`) can produce each output type; video is skipped at run time. */
export const FITTING: Record<OutputType, Array<'image' | 'text' | 'svg'>> = {
  image: ['image'],
  code: ['text', 'svg'],
  screen: ['text'],
  design: ['svg', 'text'],
  video: [],
};

export interface Position {
  x: number;
  y: number;
}

/** A node as stored, with the fields of every kind optional here; unknown properties are kept. */
export interface DocNode {
  id: string;
  kind: Kind;
  position: Position;
  label?: string;
  text?: string;
  url?: string;
  output?: OutputType;
  prompt?: string;
  model?: string;
  aspectRatio?: string;
  targetLanguage?: string;
  platform?: string;
  [other: string]: unknown;
}

export interface DocEdge {
  from: string;
  to: string;
  [other: string]: unknown;
}

export interface Doc {
  name: string;
  nodes: DocNode[];
  edges: DocEdge[];
}

export const edgeKey = (e: { from: string; to: string }) => `${e.from}->${e.to}`;

/** What a node is called on the canvas, in lists and for screen readers: its label, else its id. */
export function nodeName(n: Pick<DocNode, 'id' | 'label'>): string {
  return n.label?.trim() ? n.label.trim() : n.id;
}

/** The first free id for a new node of this kind: text-1, prompt-2, … */
export function newNodeId(doc: Doc, kind: Kind): string {
  const taken = new Set(doc.nodes.map((n) => n.id));
  for (let i = 1; ; i++) if (!taken.has(`${kind}-${i}`)) return `${kind}-${i}`;
}

/** A new node of `kind` at `position`; a prompt gets `model` when one is given. */
export function newNode(doc: Doc, kind: Kind, position: Position, model?: string): DocNode {
  const id = newNodeId(doc, kind);
  switch (kind) {
    case 'text': return { id, kind, position, text: '' };
    case 'image': return { id, kind, position, url: '' };
    case 'prompt': return { id, kind, position, output: 'image', prompt: '', ...(model ? { model } : {}), aspectRatio: '1:1' };
    case 'output': return { id, kind, position, label: '' };
  }
}

/**
 * A workflow's graph (GET /workflows/{id}) as the editor's document. Results that runs wrote back
 * onto output nodes are left out: a save that omits them keeps them on the server. Nodes without a
 * position are listed in `unplaced` (the editor lays those out).
 */
export function fromGraph(name: string, graph: { nodes: unknown[]; edges: unknown[] }): { doc: Doc; unplaced: boolean } {
  let unplaced = false;
  const nodes = graph.nodes.map((raw, i): DocNode => {
    const { result: _result, position, ...n } = raw as DocNode & { result?: unknown };
    const ok = position && typeof position === 'object' && Number.isFinite((position as Position).x) && Number.isFinite((position as Position).y);
    if (!ok) unplaced = true;
    return { ...n, position: ok ? { x: (position as Position).x, y: (position as Position).y } : { x: (i % 4) * 220, y: Math.floor(i / 4) * 140 } } as DocNode;
  });
  const edges = graph.edges.map((e) => ({ ...(e as DocEdge) }));
  return { doc: { name, nodes, edges }, unplaced };
}

/** The body of POST /workflows and PUT /workflows/{id}: empty optional fields left out, positions rounded. */
export function saveBody(doc: Doc): { name: string; graph: { nodes: Array<Record<string, unknown>>; edges: DocEdge[] } } {
  const OPTIONAL = ['label', 'model', 'aspectRatio', 'targetLanguage', 'platform'];
  const nodes = doc.nodes.map((n) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(n)) {
      if (OPTIONAL.includes(k) && (v === undefined || v === '')) continue;
      if (v === undefined) continue;
      out[k] = k === 'position' ? { x: Math.round(n.position.x), y: Math.round(n.position.y) } : v;
    }
    // Fields that belong to another kind (after a kind-specific edit) are not sent.
    if (n.kind !== 'prompt') for (const k of ['output', 'prompt', 'model', 'aspectRatio', 'targetLanguage']) delete out[k];
    if (n.kind === 'prompt' && n.output !== 'image') delete out.aspectRatio;
    if (n.kind === 'prompt' && n.output === 'image') delete out.targetLanguage;
    return out;
  });
  return { name: doc.name, graph: { nodes, edges: doc.edges.map((e) => ({ ...e })) } };
}

/** Whether nodes `from` → `to` may be joined, by the rules the server checks; null when they may, else why not. */
export function connectionProblem(doc: Doc, from: string, to: string): string | null {
  const a = doc.nodes.find((n) => n.id === from);
  const b = doc.nodes.find((n) => n.id === to);
  if (!a || !b) return 'Choose two nodes.';
  if (from === to) return 'A node cannot feed itself.';
  if (doc.edges.some((e) => e.from === from && e.to === to)) return `${nodeName(a)} already feeds ${nodeName(b)}.`;
  if (a.kind === 'prompt') {
    if (b.kind !== 'output') return 'A prompt can only feed output nodes.';
    const other = doc.edges.find((e) => e.to === to && doc.nodes.find((n) => n.id === e.from)?.kind === 'prompt');
    if (other) return `${nodeName(b)} is already fed by ${nodeName(doc.nodes.find((n) => n.id === other.from)!)}.`;
  } else if (b.kind === 'output') {
    return 'An output node is fed by a prompt only.';
  } else if (b.kind !== 'prompt') {
    return `${KIND_NAME[b.kind]} nodes take no inputs.`;
  }
  // No cycles: `to` must not already lead to `from`.
  const next = new Map<string, string[]>();
  for (const e of doc.edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const seen = new Set<string>();
  const stack = [to];
  while (stack.length) {
    const id = stack.pop()!;
    if (id === from) return 'That edge would make a cycle.';
    if (seen.has(id)) continue;
    seen.add(id);
    stack.push(...(next.get(id) ?? []));
  }
  return null;
}

/** Which side a node has handles on: inputs (prompt, output) and outputs (all but none). */
export const takesInput = (kind: Kind) => kind === 'prompt' || kind === 'output';
export const givesOutput = (_kind: Kind) => true;

export interface Problems {
  /** By node id: the field a pointer names ('' for the node as a whole) and the message. */
  nodes: Map<string, Array<{ field: string; message: string }>>;
  edges: Map<string, string[]>;
  name: string[];
  /** Problems that name neither a node nor an edge (the graph as a whole, or an unknown pointer). */
  general: string[];
}

export const noProblems = (): Problems => ({ nodes: new Map(), edges: new Map(), name: [], general: [] });

/** RFC 6901: a JSON pointer's tokens, unescaped. */
function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) return [path];
  return path.slice(1).split('/').map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/**
 * Sorts a 400's `error.details` onto what they name. Pointers index the body that was sent, so
 * `sent` is that body's node ids and edge keys in order: `/graph/nodes/3/model` is the model of
 * the fourth node sent, `/graph/edges/2` the third edge, `/name` the name.
 */
export function placeProblems(details: Array<{ path: string; message: string }>, sent: { nodes: string[]; edges: string[] }): Problems {
  const p = noProblems();
  for (const detail of details) {
    // Shown on what they name, the messages need not name it again (`node "p1": …`, `edge 2 (a → b): …`).
    const d = { ...detail, message: detail.message.replace(/^(node "(?:[^"\\]|\\.)*"|nodes\[\d+\]|edge \d+ \([^)]*\)|name): /, '') };
    const [top, list, index, field] = pointer(d.path);
    const i = Number(index);
    if (top === 'name') p.name.push(d.message);
    else if (top === 'graph' && list === 'nodes' && Number.isInteger(i) && sent.nodes[i] !== undefined) {
      const id = sent.nodes[i]!;
      p.nodes.set(id, [...(p.nodes.get(id) ?? []), { field: field ?? '', message: d.message }]);
    } else if (top === 'graph' && list === 'edges' && Number.isInteger(i) && sent.edges[i] !== undefined) {
      const key = sent.edges[i]!;
      p.edges.set(key, [...(p.edges.get(key) ?? []), d.message]);
    } else p.general.push(detail.message);
  }
  return p;
}

export const problemCount = (p: Problems) =>
  [...p.nodes.values()].reduce((s, l) => s + l.length, 0) + [...p.edges.values()].reduce((s, l) => s + l.length, 0) + p.name.length + p.general.length;

/**
 * Undo history: the documents before (`past`) and after (`future`) the present one. An edit with
 * a `coalesce` key equal to the previous edit's, within a short while, replaces the present
 * instead of adding a step (typing a word is one step, not one per letter).
 */
export interface History {
  past: Doc[];
  present: Doc;
  future: Doc[];
  lastKey: string | null;
  lastAt: number;
}

const LIMIT = 200;
const COALESCE_MS = 1200;

export const history = (doc: Doc): History => ({ past: [], present: doc, future: [], lastKey: null, lastAt: 0 });

export function commit(h: History, next: Doc, coalesce: string | null = null, now = Date.now()): History {
  if (next === h.present) return h;
  if (coalesce !== null && coalesce === h.lastKey && now - h.lastAt < COALESCE_MS) {
    return { ...h, present: next, future: [], lastAt: now };
  }
  return { past: [...h.past, h.present].slice(-LIMIT), present: next, future: [], lastKey: coalesce, lastAt: now };
}

/** Replaces the present without a step (the moves of a drag in progress). */
export const replace = (h: History, next: Doc): History => ({ ...h, present: next });

/** Adds `before` as a step under the present (the end of a drag that began at `before`). */
export const stepFrom = (h: History, before: Doc): History =>
  before === h.present ? h : { past: [...h.past, before].slice(-LIMIT), present: h.present, future: [], lastKey: null, lastAt: 0 };

export function undo(h: History): History {
  if (!h.past.length) return h;
  return { past: h.past.slice(0, -1), present: h.past[h.past.length - 1]!, future: [h.present, ...h.future], lastKey: null, lastAt: 0 };
}

export function redo(h: History): History {
  if (!h.future.length) return h;
  return { past: [...h.past, h.present], present: h.future[0]!, future: h.future.slice(1), lastKey: null, lastAt: 0 };
}
