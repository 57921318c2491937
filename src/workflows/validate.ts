// Graph validation on save and at run start: shape, unique ids, edges that reference nodes and
// connect allowed kinds, no cycles, and prompt models that can produce their output type. Every
// problem names the offending node or edge.

import * as v from 'valibot';
import { fallbackChain, type CatalogModel, type ModelCategory } from '../billing/catalog.ts';
import { MAX_IMAGES } from '../providers/types.ts';
import { Graph, type GraphValue, type NodeValue, type OutputType, type PromptNodeValue } from './graph.ts';

export interface ValidateOptions {
  /** Enabled catalog entries by id. */
  models: ReadonlyMap<string, CatalogModel>;
  defaultImageModel: string;
  defaultCodeModel: string;
  /** A problem with an image node's url for the owner (store ownership, scheme), or null. */
  checkImage?: (url: string) => string | null;
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

export type Validation = { ok: true; value: ValidGraph } | { ok: false; issues: string[] };

/** Which model categories can produce each output type (video is skipped, so anything goes). */
const CATEGORIES: Record<Exclude<OutputType, 'video'>, ModelCategory[]> = {
  image: ['image'],
  code: ['text', 'svg'],
  screen: ['text'],
  design: ['svg', 'text'],
};

const CATEGORY_NAME: Record<ModelCategory, string> = { image: 'an image', text: 'a text', svg: 'an SVG' };

/** The first few problems as one message (API 400 / CLI error). */
export function issuesMessage(issues: string[], max = 5): string {
  const shown = issues.slice(0, max).join('; ');
  return issues.length > max ? `${shown}; and ${issues.length - max} more` : shown;
}

function schemaIssues(input: unknown, issues: readonly v.BaseIssue<unknown>[]): string[] {
  const raw = input as { nodes?: unknown[]; edges?: unknown[] } | null;
  return issues.map((issue) => {
    const path = issue.path?.map((p) => p.key) ?? [];
    const rest = path.slice(2).join('.');
    const msg = rest && !issue.message.startsWith(String(path[path.length - 1])) ? `${rest}: ${issue.message}` : issue.message;
    if (path[0] === 'nodes' && typeof path[1] === 'number') {
      const id = (raw?.nodes?.[path[1]] as { id?: unknown } | undefined)?.id;
      return typeof id === 'string' && id ? `node "${id}": ${msg}` : `nodes[${path[1]}]: ${msg}`;
    }
    if (path[0] === 'edges' && typeof path[1] === 'number') {
      const e = raw?.edges?.[path[1]] as { from?: unknown; to?: unknown } | undefined;
      return `edge ${path[1]} (${String(e?.from ?? '?')} → ${String(e?.to ?? '?')}): ${msg}`;
    }
    const where = path.join('.');
    return where ? `${where}: ${issue.message}` : `graph: ${issue.message}`;
  });
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

export function validateGraph(input: unknown, opts: ValidateOptions): Validation {
  const parsed = v.safeParse(Graph, input);
  if (!parsed.success) return { ok: false, issues: schemaIssues(input, parsed.issues) };
  const graph = parsed.output;
  const issues: string[] = [];

  const byId = new Map<string, NodeValue>();
  graph.nodes.forEach((n, i) => {
    if (byId.has(n.id)) issues.push(`node "${n.id}": duplicate id (nodes[${i}])`);
    else byId.set(n.id, n);
  });

  const producer = new Map<string, string>();
  const outputsOf = new Map<string, string[]>();
  const inputsOf = new Map<string, string[]>();
  const next = new Map<string, string[]>();
  const seenEdges = new Map<string, number>();
  graph.edges.forEach((e, i) => {
    const name = `edge ${i} (${e.from} → ${e.to})`;
    const from = byId.get(e.from);
    const to = byId.get(e.to);
    if (!from) return void issues.push(`${name}: "${e.from}" is not a node`);
    if (!to) return void issues.push(`${name}: "${e.to}" is not a node`);
    const key = JSON.stringify([e.from, e.to]);
    if (seenEdges.has(key)) return void issues.push(`${name}: duplicates edge ${seenEdges.get(key)}`);
    seenEdges.set(key, i);
    if (e.from === e.to) return void issues.push(`${name}: a node cannot feed itself (cycle)`);
    if (from.kind === 'prompt') {
      if (to.kind !== 'output') return void issues.push(`${name}: a prompt node can only feed output nodes`);
      const other = producer.get(e.to);
      if (other !== undefined) return void issues.push(`${name}: output node "${e.to}" is already fed by prompt "${other}"`);
      producer.set(e.to, e.from);
      outputsOf.set(e.from, [...(outputsOf.get(e.from) ?? []), e.to]);
    } else if (to.kind === 'output') {
      return void issues.push(`${name}: an output node can only be fed by a prompt node`);
    } else if (to.kind !== 'prompt') {
      return void issues.push(`${name}: ${to.kind} nodes take no inputs`);
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
  if (indegree.size) issues.push(`cycle: ${cyclePath(new Set(indegree.keys()), next).join(' → ')}`);

  const modelOf = new Map<string, CatalogModel | null>();
  const fallbacksOf = new Map<string, CatalogModel[]>();
  for (const node of byId.values()) {
    if (node.kind === 'image' && opts.checkImage) {
      const problem = opts.checkImage(node.url);
      if (problem) issues.push(`node "${node.id}": ${problem}`);
    }
    if (node.kind !== 'prompt') continue;
    const model = checkPrompt(node, byId, producer, inputsOf, opts, issues);
    modelOf.set(node.id, model);
    if (model?.fallbacks?.length) fallbacksOf.set(node.id, fallbackChain(model, model.fallbacks.map((id) => opts.models.get(id)), 0));
  }

  return issues.length ? { ok: false, issues } : { ok: true, value: { graph, byId, producer, outputsOf, inputsOf, modelOf, fallbacksOf } };
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

function checkPrompt(
  node: PromptNodeValue,
  byId: Map<string, NodeValue>,
  producer: Map<string, string>,
  inputsOf: Map<string, string[]>,
  opts: ValidateOptions,
  issues: string[],
): CatalogModel | null {
  const name = `node "${node.id}"`;
  let images = 0;
  for (const from of inputsOf.get(node.id) ?? []) {
    const t = valueType(from, byId, producer);
    if (t === 'missing') issues.push(`${name}: input "${from}" is an output node that no prompt produces and that holds no result`);
    if (t === 'expired') issues.push(`${name}: input "${from}" holds an image that expired and was removed (retention); connect the prompt that makes it, or run that prompt again`);
    if (t === 'image') images++;
  }
  if (node.output === 'video') return null;

  const modelId = node.model ?? (node.output === 'image' ? opts.defaultImageModel : opts.defaultCodeModel);
  const model = opts.models.get(modelId);
  if (!model) {
    issues.push(node.model === undefined ? `${name}: the default ${node.output === 'image' ? 'image' : 'code'} model is not available` : `${name}: model "${modelId}" is not in the catalog`);
    return null;
  }
  if (!CATEGORIES[node.output].includes(model.category)) {
    issues.push(`${name}: model "${model.id}" is ${CATEGORY_NAME[model.category]} model and cannot produce ${node.output} output`);
    return null;
  }
  if (node.output === 'code' && model.category === 'svg' && node.targetLanguage !== undefined && node.targetLanguage !== 'svg') {
    issues.push(`${name}: model "${model.id}" produces SVG only; set targetLanguage to "svg" or omit it`);
  }
  if (images > 0 && !model.supports_image_input) {
    issues.push(`${name}: model "${model.id}" does not accept image inputs, but ${images} image input${images === 1 ? ' feeds' : 's feed'} it`);
  }
  if (images > MAX_IMAGES) issues.push(`${name}: at most ${MAX_IMAGES} image inputs, got ${images}`);
  return model;
}
