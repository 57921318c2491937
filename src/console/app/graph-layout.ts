// Lays out a run's graph with ELK's layered algorithm (elkjs): layers left to right when they fit
// the width, top to bottom otherwise, and edges routed orthogonally between the nodes, never under
// one. elkjs is ~480 KB gzipped, so it is its own chunk, loaded the first time a graph is drawn.
// Its bundled build runs in the page's thread (no worker, no eval), which the console's CSP allows.

import type { ELK, ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api.js';

export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface LaidEdge {
  from: string;
  to: string;
  /** Start, bends, end: every segment horizontal or vertical. */
  points: Array<{ x: number; y: number }>;
}

export interface GraphLayout {
  direction: 'RIGHT' | 'DOWN';
  width: number;
  height: number;
  nodes: Map<string, Box>;
  edges: LaidEdge[];
}

let engine: Promise<ELK> | null = null;

/** Starts loading the layout engine (the Workflows section does, so that a run's graph is drawn at once). */
export function preloadLayout(): void {
  elk().catch(() => {});
}

function elk(): Promise<ELK> {
  engine ??= import('elkjs/lib/elk.bundled.js').then(
    (m) => {
      // A CommonJS module whose exports are the constructor, which also is its own `default`.
      const exported = m.default as unknown as { default?: new () => ELK } & (new () => ELK);
      return new (exported.default ?? exported)();
    },
    (e) => {
      engine = null; // a failed download is tried again next time
      throw e;
    },
  );
  return engine;
}

const OPTIONS: Record<string, string> = {
  'elk.algorithm': 'layered',
  'elk.edgeRouting': 'ORTHOGONAL',
  'elk.layered.nodePlacement.strategy': 'NETWORK_SIMPLEX',
  'elk.layered.spacing.nodeNodeBetweenLayers': '52',
  'elk.layered.spacing.edgeNodeBetweenLayers': '18',
  'elk.spacing.nodeNode': '22',
  'elk.spacing.edgeNode': '16',
  'elk.spacing.edgeEdge': '12',
  'elk.layered.spacing.edgeEdgeBetweenLayers': '12',
  'elk.padding': '[top=10,left=4,bottom=10,right=8]',
};

async function layOut(direction: GraphLayout['direction'], sizes: Map<string, { width: number; height: number }>, edges: Array<{ from: string; to: string }>, options: Record<string, string>): Promise<GraphLayout> {
  const graph: ElkNode = {
    id: 'root',
    layoutOptions: { ...OPTIONS, ...options, 'elk.direction': direction },
    children: [...sizes].map(([id, s]) => ({ id, width: s.width, height: s.height })),
    edges: edges.map((e, i): ElkExtendedEdge => ({ id: `e${i}`, sources: [e.from], targets: [e.to] })),
  };
  const out = await (await elk()).layout(graph);
  const nodes = new Map<string, Box>();
  for (const n of out.children ?? []) nodes.set(n.id, { x: n.x ?? 0, y: n.y ?? 0, width: n.width ?? 0, height: n.height ?? 0 });
  const laid = (out.edges ?? []).map((e): LaidEdge => {
    const { from, to } = edges[Number(e.id.slice(1))]!;
    return { from, to, points: (e.sections ?? []).flatMap((s) => [s.startPoint, ...(s.bendPoints ?? []), s.endPoint]) };
  });
  return { direction, width: Math.ceil(out.width ?? 0), height: Math.ceil(out.height ?? 0), nodes, edges: laid };
}

/**
 * The layout for nodes of the given sizes: left to right when that fits `maxWidth`, otherwise top
 * to bottom (which may still be wider, then the graph scrolls inside its card). `options` are ELK
 * layout options over the run graph's (the editor spaces its nodes wider).
 */
export async function layoutGraph(
  sizes: Map<string, { width: number; height: number }>, edges: Array<{ from: string; to: string }>, maxWidth: number, options: Record<string, string> = {},
): Promise<GraphLayout> {
  const known = edges.filter((e) => sizes.has(e.from) && sizes.has(e.to));
  const across = await layOut('RIGHT', sizes, known, options);
  return across.width <= maxWidth ? across : layOut('DOWN', sizes, known, options);
}

/** An SVG path along orthogonal points, its corners rounded (at most `radius`, less on short legs). */
export function roundedPath(points: Array<{ x: number; y: number }>, radius = 8): string {
  if (points.length === 0) return '';
  const f = (n: number) => Math.round(n * 10) / 10;
  let d = `M${f(points[0]!.x)},${f(points[0]!.y)}`;
  for (let i = 1; i < points.length - 1; i++) {
    const [a, b, c] = [points[i - 1]!, points[i]!, points[i + 1]!];
    const r = Math.min(radius, Math.hypot(b.x - a.x, b.y - a.y) / 2, Math.hypot(c.x - b.x, c.y - b.y) / 2);
    const toward = (p: { x: number; y: number }, q: { x: number; y: number }) => {
      const len = Math.hypot(q.x - p.x, q.y - p.y) || 1;
      return { x: p.x + ((q.x - p.x) / len) * r, y: p.y + ((q.y - p.y) / len) * r };
    };
    const p1 = toward(b, a);
    const p2 = toward(b, c);
    d += ` L${f(p1.x)},${f(p1.y)} Q${f(b.x)},${f(b.y)} ${f(p2.x)},${f(p2.y)}`;
  }
  const last = points[points.length - 1]!;
  return `${d} L${f(last.x)},${f(last.y)}`;
}
