// Graph validation on save and at run start: shape and limits, unique ids, edges that reference
// nodes and connect allowed kinds, no cycles, and prompt models that can produce their output
// type. Every problem is collected, with a JSON pointer to where it is and a message naming the
// offending node or edge.

import * as v from 'valibot';
import { fallbackChain, type CatalogModel, type ModelCategory } from '../billing/catalog.ts';
import { MAX_IMAGES } from '../providers/types.ts';
import {
  Edge, MAX_DEPTH, MAX_EDGES, MAX_NODES, Node, SAVE_MAX_BYTES, SAVE_MAX_EDGES, SAVE_MAX_NODES,
  type GraphValue, type NodeValue, type OutputType, type PromptNodeValue,
} from './graph.ts';

export interface GraphLimits {
  nodes: number;
  edges: number;
  /** UTF-8 bytes of the graph's JSON without written-back results; null: not checked. */
  bytes: number | null;
}

/** What a save accepts. */
export const SAVE_LIMITS: GraphLimits = { nodes: SAVE_MAX_NODES, edges: SAVE_MAX_EDGES, bytes: SAVE_MAX_BYTES };
/** What a run starts from: saved graphs, some saved before the save limits existed. */
export const RUN_LIMITS: GraphLimits = { nodes: MAX_NODES, edges: MAX_EDGES, bytes: null };

export interface ValidateOptions {
  /** Enabled catalog entries by id. */
  models: ReadonlyMap<string, CatalogModel>;
  defaultImageModel: string;
  defaultCodeModel: string;
  /** A problem with an image node's url for the owner (store ownership, scheme), or null. */
  checkImage?: (url: string) => string | null;
  /** Default RUN_LIMITS. */
  limits?: GraphLimits;
}

/** A graph that passed every check, with the lookups execution planning needs. */
export interface ValidGraph {
  graph: GraphValue;
  byId: Map<string, NodeValue>;
  /** output node id → the prompt node producing it. */
  producer: Map<string, string>;
  /** prompt node id → its output node ids, in edge order. */
  outputsOf: Map<string, string[]>;
  /** node id → ids of the nodes with an edge into it, in edge order. */
  inputsOf: Map<string, string[]>;
  /** prompt node id → the catalog entry it runs with (null for video prompts). */
  modelOf: Map<string, CatalogModel | null>;
  /** prompt node id → the entries its model falls back to (same category, enabled), in order. */
  fallbacksOf: Map<string, CatalogModel[]>;
}

/**
 * One problem: a JSON pointer into the graph (`/nodes/3/model`; `''` is the graph itself) and a
 * message that names the node or edge (`node "p1": model "x" is not in the catalog`).
 */
export interface GraphIssue {
  path: string;
  message: string;
}

export type Validation = { ok: true; value: ValidGraph } | { ok: false; issues: GraphIssue[] };

/** Which model categories can produce each output type (video is skipped, so anything goes). */
const CATEGORIES: Record<Exclude<OutputType, 'video'>, ModelCategory[]> = {
  image: ['image'],
  code: ['text', 'svg'],
  screen: ['text'],
  design: ['svg', 'text'],
};

const CATEGORY_NAME: Record<ModelCategory, string> = { image: 'an image', text: 'a text', svg: 'an SVG' };

/** The first few problems as one message (API 400 / CLI error). */
export function issuesMessage(issues: Array<string | GraphIssue>, max = 5): string {
  const texts = issues.map((i) => (typeof i === 'string' ? i : i.message));
  const shown = texts.slice(0, max).join('; ');
  return texts.length > max ? `${shown}; and ${texts.length - max} more` : shown;
}

/** A JSON pointer (RFC 6901) from path tokens. */
export function pointer(...tokens: Array<string | number>): string {
  return tokens.map((t) => `/${String(t).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** How a node or edge is named in messages, from its raw value. */
function nodeName(raw: unknown, i: number): string {
  const id = isObject(raw) ? raw.id : undefined;
  return typeof id === 'string' && id ? `node "${id}"` : `nodes[${i}]`;
}
function edgeName(raw: unknown, i: number): string {
  const e = isObject(raw) ? raw : {};
  const end = (x: unknown) => (typeof x === 'string' ? x : '?');
  return `edge ${i} (${end(e.from)} → ${end(e.to)})`;
}

/** valibot issues of one node or edge, as graph issues under `/nodes/i` or `/edges/i`. */
function elementIssues(list: 'nodes' | 'edges', i: number, name: string, issues: readonly v.BaseIssue<unknown>[]): GraphIssue[] {
  return issues.map((issue) => {
    const keys = (issue.path ?? []).map((p) => p.key as string | number);
    const rest = keys.join('.');
    const last = keys[keys.length - 1];
    const msg = rest && !issue.message.startsWith(String(last)) ? `${rest}: ${issue.message}` : issue.message;
    return { path: pointer(list, i, ...keys), message: `${name}: ${msg}` };
  });
}

/**
 * The first place where `root` nests deeper than `max` levels (the root being level 1), as a
 * pointer, or null. Iterative, one open iterator per level: JSON.parse accepts nesting far deeper
 * than JSON.stringify (and so the database driver) can handle, and a wide body costs no more
 * memory than a narrow one.
 */
export function tooDeep(root: unknown, max: number): string | null {
  if (typeof root !== 'object' || root === null) return null;
  const entries = (x: object): Iterator<[string | number, unknown]> => (Array.isArray(x) ? x.entries() : Object.entries(x)[Symbol.iterator]());
  const open: Array<{ key: string | number; rest: Iterator<[string | number, unknown]> }> = [{ key: '', rest: entries(root) }];
  while (open.length) {
    const next = open[open.length - 1]!.rest.next();
    if (next.done) {
      open.pop();
      continue;
    }
    const [key, value] = next.value;
    if (typeof value !== 'object' || value === null) continue;
    if (open.length + 1 > max) return pointer(...open.slice(1).map((o) => o.key), key);
    open.push({ key, rest: entries(value) });
  }
  return null;
}

/** The graph as its author wrote it: output nodes without their written-back `result`. */
function authored(graph: Record<string, unknown>): unknown {
  const nodes = (graph.nodes as unknown[]).map((n) => (isObject(n) && n.kind === 'output' && 'result' in n ? { ...n, result: undefined } : n));
  return { ...graph, nodes };
}

/** Finds one cycle among `nodes` (all of which lie on or lead into a cycle) for the message. */
function cyclePath(nodes: Set<string>, next: Map<string, string[]>): string[] {
  const start = nodes.values().next().value as string;
  const seen = new Map<string, number>();
  const path: string[] = [];
  let cur: string | undefined = start;
  while (cur !== undefined && !seen.has(cur)) {
    seen.set(cur, path.length);
    path.push(cur);
    cur = (next.get(cur) ?? []).find((n) => nodes.has(n));
  }
  return cur === undefined ? path : [...path.slice(seen.get(cur)), cur];
}

/**
 * Checks a graph and collects every problem: its shape and limits first (past a limit nothing else
 * is checked), then each node and edge on its own, then what they make together (ids, edges,
 * cycles, models, image urls). A node or edge that is malformed is reported once and left out of
 * the later checks; an edge to such a node is not reported again as dangling.
 */
export function validateGraph(input: unknown, opts: ValidateOptions): Validation {
  const limits = opts.limits ?? RUN_LIMITS;
  if (!isObject(input)) return { ok: false, issues: [{ path: '', message: 'graph: the graph must be an object with "nodes" and "edges" arrays' }] };
  const issues: GraphIssue[] = [];
  const rawNodes = input.nodes;
  const rawEdges = input.edges;
  if (!Array.isArray(rawNodes)) issues.push({ path: '/nodes', message: 'graph: nodes must be an array' });
  else if (rawNodes.length > limits.nodes) issues.push({ path: '/nodes', message: `graph: a graph has at most ${limits.nodes} nodes, this one has ${rawNodes.length}` });
  if (!Array.isArray(rawEdges)) issues.push({ path: '/edges', message: 'graph: edges must be an array' });
  else if (rawEdges.length > limits.edges) issues.push({ path: '/edges', message: `graph: a graph has at most ${limits.edges} edges, this one has ${rawEdges.length}` });
  if (issues.length) return { ok: false, issues };
  const deep = tooDeep(input, MAX_DEPTH);
  if (deep !== null) return { ok: false, issues: [{ path: deep, message: `graph: nested more than ${MAX_DEPTH} levels deep` }] };
  if (limits.bytes !== null) {
    const bytes = Buffer.byteLength(JSON.stringify(authored(input)), 'utf8');
    if (bytes > limits.bytes) {
      const kb = (n: number) => `${Math.ceil(n / 1024).toLocaleString('en-US')} KB`;
      return { ok: false, issues: [{ path: '', message: `graph: at most ${kb(limits.bytes)} of JSON (written-back results not counted), this one is ${kb(bytes)}` }] };
    }
  }
  const nodesIn = rawNodes as unknown[];
  const edgesIn = rawEdges as unknown[];

  // Each node on its own. Ids of malformed nodes are kept apart: edges to them are not dangling.
  const nodes: NodeValue[] = [];
  const byId = new Map<string, NodeValue>();
  const indexOf = new Map<string, number>();
  const firstAt = new Map<string, number>();
  const malformed = new Set<string>();
  nodesIn.forEach((raw, i) => {
    const parsed = v.safeParse(Node, raw);
    const id = isObject(raw) && typeof raw.id === 'string' ? raw.id : null;
    if (id !== null && firstAt.has(id)) {
      issues.push({ path: pointer('nodes', i, 'id'), message: `node "${id}": duplicate id (nodes[${i}])` });
      if (!parsed.success) issues.push(...elementIssues('nodes', i, nodeName(raw, i), parsed.issues));
      return;
    }
    if (id !== null) firstAt.set(id, i);
    if (!parsed.success) {
      issues.push(...elementIssues('nodes', i, nodeName(raw, i), parsed.issues));
      if (id !== null) malformed.add(id);
      return;
    }
    nodes.push(parsed.output);
    byId.set(parsed.output.id, parsed.output);
    indexOf.set(parsed.output.id, i);
  });

  const edges: Array<v.InferOutput<typeof Edge>> = [];
  const producer = new Map<string, string>();
  const outputsOf = new Map<string, string[]>();
  const inputsOf = new Map<string, string[]>();
  const next = new Map<string, string[]>();
  const edgeAt = new Map<string, number>();
  edgesIn.forEach((raw, i) => {
    const parsed = v.safeParse(Edge, raw);
    if (!parsed.success) return void issues.push(...elementIssues('edges', i, edgeName(raw, i), parsed.issues));
    const e = parsed.output;
    edges.push(e);
    const name = edgeName(e, i);
    const from = byId.get(e.from);
    const to = byId.get(e.to);
    if (!from || !to) {
      if (!from && !malformed.has(e.from)) issues.push({ path: pointer('edges', i, 'from'), message: `${name}: "${e.from}" is not a node` });
      if (!to && !malformed.has(e.to)) issues.push({ path: pointer('edges', i, 'to'), message: `${name}: "${e.to}" is not a node` });
      return;
    }
    const here = pointer('edges', i);
    const key = JSON.stringify([e.from, e.to]);
    if (edgeAt.has(key)) return void issues.push({ path: here, message: `${name}: duplicates edge ${edgeAt.get(key)}` });
    edgeAt.set(key, i);
    if (e.from === e.to) return void issues.push({ path: here, message: `${name}: a node cannot feed itself (cycle)` });
    if (from.kind === 'prompt') {
      if (to.kind !== 'output') return void issues.push({ path: here, message: `${name}: a prompt node can only feed output nodes` });
      const other = producer.get(e.to);
      if (other !== undefined) return void issues.push({ path: here, message: `${name}: output node "${e.to}" is already fed by prompt "${other}"` });
      producer.set(e.to, e.from);
      outputsOf.set(e.from, [...(outputsOf.get(e.from) ?? []), e.to]);
    } else if (to.kind === 'output') {
      return void issues.push({ path: here, message: `${name}: an output node can only be fed by a prompt node` });
    } else if (to.kind !== 'prompt') {
      return void issues.push({ path: here, message: `${name}: ${to.kind} nodes take no inputs` });
    }
    inputsOf.set(e.to, [...(inputsOf.get(e.to) ?? []), e.from]);
    next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  });

  // Cycles (Kahn): whatever cannot be ordered lies on, or behind, a cycle.
  const indegree = new Map<string, number>([...byId.keys()].map((id) => [id, 0]));
  for (const targets of next.values()) for (const t of targets) indegree.set(t, indegree.get(t)! + 1);
  const ready = [...indegree].filter(([, d]) => d === 0).map(([id]) => id);
  while (ready.length) {
    const id = ready.pop()!;
    indegree.delete(id);
    for (const t of next.get(id) ?? []) {
      const d = indegree.get(t)! - 1;
      indegree.set(t, d);
      if (d === 0) ready.push(t);
    }
  }
  if (indegree.size) {
    const cycle = cyclePath(new Set(indegree.keys()), next);
    // The edge that closes the cycle (its last hop): where an editor shows it.
    const closing = edgeAt.get(JSON.stringify(cycle.slice(-2)));
    issues.push({ path: closing === undefined ? '/edges' : pointer('edges', closing), message: `cycle: ${cycle.join(' → ')}` });
  }

  const ctx: CheckContext = { byId, indexOf, producer, inputsOf, edgeAt, opts, issues };
  const modelOf = new Map<string, CatalogModel | null>();
  const fallbacksOf = new Map<string, CatalogModel[]>();
  for (const node of byId.values()) {
    if (node.kind === 'image' && opts.checkImage) {
      const problem = opts.checkImage(node.url);
      if (problem) issues.push({ path: pointer('nodes', indexOf.get(node.id)!, 'url'), message: `node "${node.id}": ${problem}` });
    }
    if (node.kind !== 'prompt') continue;
    const model = checkPrompt(node, ctx);
    modelOf.set(node.id, model);
    if (model?.fallbacks?.length) fallbacksOf.set(node.id, fallbackChain(model, model.fallbacks.map((id) => opts.models.get(id)), 0));
  }

  if (issues.length) return { ok: false, issues };
  const graph = { ...input, nodes, edges } as GraphValue;
  return { ok: true, value: { graph, byId, producer, outputsOf, inputsOf, modelOf, fallbacksOf } };
}

interface CheckContext {
  byId: Map<string, NodeValue>;
  indexOf: Map<string, number>;
  producer: Map<string, string>;
  inputsOf: Map<string, string[]>;
  edgeAt: Map<string, number>;
  opts: ValidateOptions;
  issues: GraphIssue[];
}

/** The value type a node hands to a prompt it feeds (null: no value, e.g. a skipped video). */
function valueType(id: string, byId: Map<string, NodeValue>, producer: Map<string, string>): 'text' | 'image' | null | 'missing' | 'expired' {
  const node = byId.get(id)!;
  if (node.kind === 'text') return 'text';
  if (node.kind === 'image') return 'image';
  if (node.kind !== 'output') return null;
  const p = producer.get(id);
  if (p !== undefined) {
    const out = (byId.get(p) as PromptNodeValue).output;
    return out === 'video' ? null : out === 'image' ? 'image' : 'text';
  }
  if (!node.result) return 'missing';
  // Retention removed a written-back image (its result keeps expiredAt, loses its path).
  if (node.result.type === 'image' && !node.result.path) return 'expired';
  return node.result.type === 'image' ? 'image' : 'text';
}

function checkPrompt(node: PromptNodeValue, c: CheckContext): CatalogModel | null {
  const { byId, producer, inputsOf, opts, issues } = c;
  const name = `node "${node.id}"`;
  const at = (...keys: string[]) => pointer('nodes', c.indexOf.get(node.id)!, ...keys);
  // A problem with the model the node names is at its `model`; with a default model, at the node.
  const modelAt = node.model === undefined ? at() : at('model');
  let images = 0;
  for (const from of inputsOf.get(node.id) ?? []) {
    const t = valueType(from, byId, producer);
    const edge = pointer('edges', c.edgeAt.get(JSON.stringify([from, node.id]))!);
    if (t === 'missing') issues.push({ path: edge, message: `${name}: input "${from}" is an output node that no prompt produces and that holds no result` });
    if (t === 'expired') issues.push({ path: edge, message: `${name}: input "${from}" holds an image that expired and was removed (retention); connect the prompt that makes it, or run that prompt again` });
    if (t === 'image') images++;
  }
  if (node.output === 'video') return null;

  const modelId = node.model ?? (node.output === 'image' ? opts.defaultImageModel : opts.defaultCodeModel);
  const model = opts.models.get(modelId);
  if (!model) {
    issues.push({
      path: modelAt,
      message: node.model === undefined ? `${name}: the default ${node.output === 'image' ? 'image' : 'code'} model is not available` : `${name}: model "${modelId}" is not in the catalog`,
    });
    return null;
  }
  if (!CATEGORIES[node.output].includes(model.category)) {
    issues.push({ path: modelAt, message: `${name}: model "${model.id}" is ${CATEGORY_NAME[model.category]} model and cannot produce ${node.output} output` });
    return null;
  }
  if (node.output === 'code' && model.category === 'svg' && node.targetLanguage !== undefined && node.targetLanguage !== 'svg') {
    issues.push({ path: at('targetLanguage'), message: `${name}: model "${model.id}" produces SVG only; set targetLanguage to "svg" or omit it` });
  }
  if (images > 0 && !model.supports_image_input) {
    issues.push({ path: modelAt, message: `${name}: model "${model.id}" does not accept image inputs, but ${images} image input${images === 1 ? ' feeds' : 's feed'} it` });
  }
  if (images > MAX_IMAGES) issues.push({ path: at(), message: `${name}: at most ${MAX_IMAGES} image inputs, got ${images}` });
  return model;
}
