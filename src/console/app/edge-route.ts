// Routes one edge of the workflow editor around the nodes, wherever they have been dragged: an
// orthogonal path (horizontal and vertical legs, as the run view's ELK layout draws them) from the
// source's output handle to the target's input handle, keeping `margin` pixels from every node's
// box, with the fewest bends for its length. Plain TypeScript, no layout engine: the editor routes
// every edge on each render (a drag moves nodes under edges), so it must take well under a
// millisecond for the graphs people draw.
//
// The method: the lines `margin` away from every node's sides, and the lines through the two
// handles, make a grid whose cells are either wholly inside a (grown) node box or wholly outside
// it. A shortest path over the free grid points, where a turn costs `BEND` pixels more, is the
// route (Dijkstra over point × heading).

export interface Point { x: number; y: number }
export interface Rect { x: number; y: number; width: number; height: number }
export type Side = 'left' | 'right' | 'top' | 'bottom';

const STEP: Record<Side, Point> = { left: { x: -1, y: 0 }, right: { x: 1, y: 0 }, top: { x: 0, y: -1 }, bottom: { x: 0, y: 1 } };
/** What a turn costs, in pixels of length: two turns are worth a detour of 60 px. */
const BEND = 30;
/** Headings: 0 right, 1 down, 2 left, 3 up. */
const DX = [1, 0, -1, 0];
const DY = [0, 1, 0, -1];
const heading = (s: Point) => (s.x > 0 ? 0 : s.y > 0 ? 1 : s.x < 0 ? 2 : 3);

/**
 * The route from `start` (on or just outside the source's border, leaving toward `startSide`) to
 * `end` (just outside the target's border on `endSide`, arriving from that side), as its corner
 * points, or null when no route keeps `margin` from the nodes (nodes packed too close).
 * `obstacles` are every node's box, the source's and the target's too (a route must not cross
 * its own nodes either); the two short legs at the handles are the only parts inside a margin.
 */
export function routeAround(start: Point, startSide: Side, end: Point, endSide: Side, obstacles: Rect[], margin: number): Point[] | null {
  const out = STEP[startSide];
  const into = STEP[endSide];
  // Where the route leaves the source's margin, and where it enters the target's (its handle side).
  const a = { x: start.x + out.x * margin, y: start.y + out.y * margin };
  const b = { x: end.x + into.x * margin, y: end.y + into.y * margin };
  // The side of an input handle faces away from its node: arriving means heading the other way.
  const arrive = heading({ x: -into.x, y: -into.y });
  const grown = obstacles.map((r) => ({ l: r.x - margin, t: r.y - margin, r: r.x + r.width + margin, b: r.y + r.height + margin }));
  const inside = (x: number, y: number) => grown.some((g) => x > g.l + 0.01 && x < g.r - 0.01 && y > g.t + 0.01 && y < g.b - 0.01);
  if (inside(a.x, a.y) || inside(b.x, b.y)) return null;

  const uniq = (v: number[]) => [...new Set(v.map((n) => Math.round(n * 100) / 100))].sort((p, q) => p - q);
  const xs = uniq([a.x, b.x, (a.x + b.x) / 2, ...grown.flatMap((g) => [g.l, g.r])]);
  const ys = uniq([a.y, b.y, (a.y + b.y) / 2, ...grown.flatMap((g) => [g.t, g.b])]);
  const W = xs.length;
  const H = ys.length;
  const id = (i: number, j: number) => j * W + i;
  const round = (n: number) => Math.round(n * 100) / 100;
  const from = id(xs.indexOf(round(a.x)), ys.indexOf(round(a.y)));
  const to = id(xs.indexOf(round(b.x)), ys.indexOf(round(b.y)));
  const free = new Uint8Array(W * H);
  for (let j = 0; j < H; j++) for (let i = 0; i < W; i++) free[id(i, j)] = inside(xs[i]!, ys[j]!) ? 0 : 1;
  // A leg between neighbouring grid points is free when its middle is (the grid has every box's sides).
  const legFree = (i: number, j: number, d: number) => {
    const i2 = i + DX[d]!;
    const j2 = j + DY[d]!;
    if (i2 < 0 || j2 < 0 || i2 >= W || j2 >= H || !free[id(i2, j2)]) return false;
    return !inside((xs[i]! + xs[i2]!) / 2, (ys[j]! + ys[j2]!) / 2);
  };

  // Dijkstra over (point, heading), with a binary heap.
  const N = W * H * 4;
  const cost = new Float64Array(N).fill(Infinity);
  const prev = new Int32Array(N).fill(-1);
  const heap: Array<[number, number]> = [];
  const push = (c: number, s: number) => {
    heap.push([c, s]);
    for (let k = heap.length - 1; k > 0;) {
      const p = (k - 1) >> 1;
      if (heap[p]![0] <= heap[k]![0]) break;
      [heap[p], heap[k]] = [heap[k]!, heap[p]!];
      k = p;
    }
  };
  const pop = () => {
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length) {
      heap[0] = last;
      for (let k = 0; ;) {
        const l = 2 * k + 1;
        const r = l + 1;
        let m = k;
        if (l < heap.length && heap[l]![0] < heap[m]![0]) m = l;
        if (r < heap.length && heap[r]![0] < heap[m]![0]) m = r;
        if (m === k) break;
        [heap[m], heap[k]] = [heap[k]!, heap[m]!];
        k = m;
      }
    }
    return top;
  };
  const first = from * 4 + heading(out);
  cost[first] = 0;
  push(0, first);
  // The target is reached heading `arrive`, or with one more turn to make.
  let best = Infinity;
  let done = -1;
  while (heap.length) {
    const [c, s] = pop();
    if (c >= best) break;
    if (c > cost[s]!) continue;
    const p = s >> 2;
    const d = s & 3;
    if (p === to) {
      const total = c + (d === arrive ? 0 : BEND);
      if (total < best) {
        best = total;
        done = s;
      }
      continue;
    }
    const i = p % W;
    const j = (p - i) / W;
    for (let d2 = 0; d2 < 4; d2++) {
      if (d2 === ((d + 2) & 3) || !legFree(i, j, d2)) continue;
      const q = id(i + DX[d2]!, j + DY[d2]!);
      const nc = c + Math.abs(xs[i + DX[d2]!]! - xs[i]!) + Math.abs(ys[j + DY[d2]!]! - ys[j]!) + (d2 === d ? 0 : BEND);
      const s2 = q * 4 + d2;
      if (nc < cost[s2]!) {
        cost[s2] = nc;
        prev[s2] = s;
        push(nc, s2);
      }
    }
  }
  if (done < 0) return null;
  const grid: Point[] = [];
  for (let s = done; s >= 0; s = prev[s]!) {
    const p = s >> 2;
    grid.push({ x: xs[p % W]!, y: ys[Math.floor(p / W)]! });
  }
  grid.reverse();
  return simplify([start, ...grid, end]);
}

/** Drops repeated points and the middle of three in a line. */
function simplify(points: Point[]): Point[] {
  const same = (p: Point, q: Point) => Math.abs(p.x - q.x) < 0.01 && Math.abs(p.y - q.y) < 0.01;
  const pts = points.filter((p, i) => i === 0 || !same(p, points[i - 1]!));
  const out: Point[] = [];
  for (const p of pts) {
    while (out.length >= 2) {
      const [u, v] = [out[out.length - 2]!, out[out.length - 1]!];
      const inLine = (Math.abs(u.x - v.x) < 0.01 && Math.abs(v.x - p.x) < 0.01) || (Math.abs(u.y - v.y) < 0.01 && Math.abs(v.y - p.y) < 0.01);
      if (!inLine) break;
      out.pop();
    }
    out.push(p);
  }
  return out;
}

/** Whether a polyline keeps more than `gap` pixels from every box but the two it joins (and those past their margin legs). */
function clear(points: Point[], boxes: Rect[], gap: number): boolean {
  for (let k = 1; k < points.length; k++) {
    const [p, q] = [points[k - 1]!, points[k]!];
    const l = Math.min(p.x, q.x);
    const r = Math.max(p.x, q.x);
    const t = Math.min(p.y, q.y);
    const b = Math.max(p.y, q.y);
    for (const box of boxes) {
      if (l < box.x + box.width + gap && r > box.x - gap && t < box.y + box.height + gap && b > box.y - gap) return false;
    }
  }
  return true;
}

/**
 * The editor's route for one edge: around the nodes near it first (fast), checked against every
 * node, then around all of them; with a smaller margin where nodes are packed close; null when
 * even that fails (the caller draws its plain curve).
 */
export function routeEdge(start: Point, startSide: Side, end: Point, endSide: Side, boxes: Rect[], own: [Rect | undefined, Rect | undefined]): Point[] | null {
  const others = boxes.filter((r) => r !== own[0] && r !== own[1]);
  const mine = [own[0], own[1]].filter((r): r is Rect => !!r);
  for (const margin of [20, 12, 8]) {
    const reach = 160;
    const l = Math.min(start.x, end.x) - reach;
    const r = Math.max(start.x, end.x) + reach;
    const t = Math.min(start.y, end.y) - reach;
    const b = Math.max(start.y, end.y) + reach;
    const near = others.filter((o) => o.x < r && o.x + o.width > l && o.y < b && o.y + o.height > t);
    for (const set of near.length < others.length ? [near, others] : [others]) {
      const route = routeAround(start, startSide, end, endSide, [...mine, ...set], margin);
      if (route && clear(route, others, 4)) return route;
    }
  }
  return null;
}

/** The point halfway along a polyline (where an edge's label goes). */
export function midpoint(points: Point[]): Point {
  const lens = points.slice(1).map((p, k) => Math.abs(p.x - points[k]!.x) + Math.abs(p.y - points[k]!.y));
  let half = lens.reduce((s, n) => s + n, 0) / 2;
  for (let k = 0; k < lens.length; k++) {
    if (half <= lens[k]!) {
      const f = lens[k] ? half / lens[k]! : 0;
      const [p, q] = [points[k]!, points[k + 1]!];
      return { x: p.x + (q.x - p.x) * f, y: p.y + (q.y - p.y) * f };
    }
    half -= lens[k]!;
  }
  return points[points.length - 1] ?? { x: 0, y: 0 };
}
