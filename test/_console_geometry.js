// The console's run graph measured in the page, evaluated over the DevTools protocol (as axe-core
// is). Plain JavaScript, not a callback in the TypeScript test: tsx keeps function names by
// wrapping named functions in a helper (__name) that the page does not have.
//
// Every edge path, sampled each pixel along its length in page coordinates, against every node's
// box: a path may touch only its own two nodes, and those only at its ends; it keeps 4 px away
// from every other node (so it neither passes under one nor runs along its border). Each path
// starts on its source's border and ends on its target's, and no two nodes overlap.
//
// By default the run view's graph; the editor's canvas passes its own selectors, and `reach`: how
// far outside its node's border an edge may start or end (React Flow's edges meet the handles,
// which sit on the border and stand out from it by half their size).
window.kilnGraphGeometry = function kilnGraphGeometry(opts = {}) {
  const { nodes = '.graph [data-node-id]', edges = '.graph svg.edges path[data-from]', reach = 2.5 } = opts;
  const boxes = [...document.querySelectorAll(nodes)].map((b) => ({ id: b.dataset.nodeId, r: b.getBoundingClientRect() }));
  const paths = [...document.querySelectorAll(edges)];
  const problems = [];
  const inside = (r, x, y, by) => x > r.left - by && x < r.right + by && y > r.top - by && y < r.bottom + by;
  const onBorder = (r, x, y) => inside(r, x, y, reach) && !inside(r, x, y, -2.5);
  const own = (id) => boxes.find((b) => b.id === id).r;
  for (const path of paths) {
    // The edge's ends: on the path, or on the element that holds it.
    const { from, to } = path.closest('[data-from]').dataset;
    const m = path.getScreenCTM();
    const len = path.getTotalLength();
    const at = (d) => {
      const p = path.getPointAtLength(d);
      return new DOMPoint(p.x, p.y).matrixTransform(m);
    };
    const start = at(0);
    const end = at(len);
    if (!onBorder(own(from), start.x, start.y)) problems.push(`${from}>${to} does not start on ${from}'s border`);
    if (!onBorder(own(to), end.x, end.y)) problems.push(`${from}>${to} does not end on ${to}'s border`);
    for (let d = 0; d <= len; d += 1) {
      const q = at(d);
      for (const b of boxes) {
        const mine = b.id === from || b.id === to;
        // Its own nodes: touched at the ends only (never crossed); any other: 4 px of clearance.
        if (mine ? inside(b.r, q.x, q.y, -1.5) : inside(b.r, q.x, q.y, 4)) {
          problems.push(`${from}>${to} at ${Math.round(q.x)},${Math.round(q.y)} is ${mine ? 'inside' : 'within 4 px of'} ${b.id}`);
          break;
        }
      }
    }
  }
  for (const a of boxes) {
    for (const b of boxes) {
      if (a.id < b.id && a.r.left < b.r.right && b.r.left < a.r.right && a.r.top < b.r.bottom && b.r.top < a.r.bottom) problems.push(`${a.id} overlaps ${b.id}`);
    }
  }
  return {
    problems: [...new Set(problems)].slice(0, 20),
    paths: paths.map((x) => `${x.closest('[data-from]').dataset.from}>${x.closest('[data-from]').dataset.to}`).sort(),
    direction: document.querySelector('.graph')?.dataset.direction,
  };
};
