// The one check behind every workflow save — REST, MCP, the console (a client of REST) and the
// operator's `kiln workflow import`: the name, and the graph against the catalog, the owner's
// store and the save limits, each problem with a JSON pointer into what was sent.

import type { CatalogModel } from '../billing/catalog.ts';
import type { Config } from '../config.ts';
import type { ErrorDetail } from '../errors.ts';
import type { GraphValue } from './graph.ts';
import { classifyImage } from './images.ts';
import { issuesMessage, RUN_LIMITS, SAVE_LIMITS, validateGraph, type GraphLimits, type Validation } from './validate.ts';

export const NAME_MAX = 200;

/**
 * Validates a graph for `accountId` against the catalog (image urls must be readable by that
 * account: https, data:, `seed/…` or its own store path). RUN_LIMITS at run start, SAVE_LIMITS on save.
 */
export function checkGraph(config: Config, models: CatalogModel[], accountId: string, graph: unknown, limits: GraphLimits = RUN_LIMITS): Validation {
  return validateGraph(graph, {
    models: new Map(models.map((m) => [m.id, m])),
    defaultImageModel: config.defaultImageModel,
    defaultCodeModel: config.defaultCodeModel,
    checkImage: (url) => {
      const ref = classifyImage(config.publicUrl, accountId, url);
      return ref.kind === 'invalid' ? ref.problem : null;
    },
    limits,
  });
}

export type SaveCheck = { ok: true; name: string | null; graph: GraphValue } | { ok: false; details: ErrorDetail[] };

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/**
 * The graph to store: output nodes whose `result` the save leaves out keep the one stored on them
 * (results are written back by runs, so a client that never sends them never erases them — even
 * one written while it edited); `"result": null` removes it. `stored` is the saved graph (null for
 * a new workflow). Anything that is not a graph is returned as is, for validation to report.
 */
export function keepResults(graph: unknown, stored: unknown): unknown {
  if (!isObject(graph) || !Array.isArray(graph.nodes)) return graph;
  const kept = new Map<string, unknown>();
  const storedNodes = isObject(stored) && Array.isArray(stored.nodes) ? stored.nodes : [];
  for (const n of storedNodes) {
    if (isObject(n) && n.kind === 'output' && typeof n.id === 'string' && isObject(n.result)) kept.set(n.id, n.result);
  }
  const nodes = graph.nodes.map((n) => {
    if (!isObject(n) || n.kind !== 'output') return n;
    if (Object.hasOwn(n, 'result')) {
      if (n.result !== null) return n;
      const { result: _cleared, ...rest } = n;
      return rest;
    }
    const result = typeof n.id === 'string' ? kept.get(n.id) : undefined;
    return result === undefined ? n : { ...n, result };
  });
  return { ...graph, nodes };
}

function nameProblem(name: unknown): string | null {
  if (typeof name !== 'string') return 'name: must be a string';
  const chars = name.length > NAME_MAX * 2 ? Infinity : [...name].length;
  if (chars < 1 || chars > NAME_MAX || !name.trim()) return `name: must be 1 to ${NAME_MAX} characters, not only spaces`;
  return null;
}

/**
 * Checks a save of `{ name, graph }` for `accountId` (whose store image URLs must be its own) and
 * collects every problem as `{ path, message }`, paths being JSON pointers into the body
 * (`/name`, `/graph/nodes/3/model`). `stored` is the graph saved so far (a replace; null for a
 * create), whose written-back results are kept (keepResults). `name: null` is allowed only with
 * `nameOptional` (the operator's replace keeps the name).
 */
export function checkSave(
  config: Config,
  models: CatalogModel[],
  accountId: string,
  body: unknown,
  opts: { stored?: unknown; nameOptional?: boolean } = {},
): SaveCheck {
  if (!isObject(body)) return { ok: false, details: [{ path: '', message: 'the body must be a JSON object with "name" and "graph"' }] };
  const details: ErrorDetail[] = [];
  const name = body.name ?? null;
  if (!(name === null && opts.nameOptional)) {
    const problem = name === null ? 'name: is required' : nameProblem(name);
    if (problem) details.push({ path: '/name', message: problem });
  }
  const graph = keepResults(body.graph, opts.stored ?? null);
  const checked = checkGraph(config, models, accountId, graph, SAVE_LIMITS);
  if (!checked.ok) details.push(...checked.issues.map((i) => ({ path: `/graph${i.path}`, message: i.message })));
  if (details.length || !checked.ok) return { ok: false, details };
  return { ok: true, name: name as string | null, graph: checked.value.graph };
}

/** The message of a refused save: the first problems, each naming its node or edge. */
export function saveMessage(details: ErrorDetail[]): string {
  return issuesMessage(details.map((d) => d.message));
}
