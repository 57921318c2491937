// The workflow editor's document logic (src/console/app/workflow-doc.ts), without a browser: the
// body it saves, the connections it allows, where a 400's details land, and the undo history.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  commit, connectionProblem, fromGraph, history, newNode, placeProblems, problemCount, redo, replace, saveBody, stepFrom, undo, type Doc,
} from '../src/console/app/workflow-doc.ts';

const at = { x: 0, y: 0 };
const doc = (): Doc => ({
  name: 'w',
  nodes: [
    { id: 'brief', kind: 'text', position: at, text: 'Sale' },
    { id: 'logo', kind: 'image', position: at, url: 'seed/logo.png' },
    { id: 'p1', kind: 'prompt', position: at, output: 'image', prompt: 'Hero', model: 'local/sketch', aspectRatio: '16:9' },
    { id: 'o1', kind: 'output', position: at, label: 'Hero' },
    { id: 'p2', kind: 'prompt', position: at, output: 'code', prompt: 'Page', targetLanguage: 'tsx' },
    { id: 'o2', kind: 'output', position: at, label: '' },
  ],
  edges: [{ from: 'brief', to: 'p1' }, { from: 'p1', to: 'o1' }, { from: 'o1', to: 'p2' }],
});

test('a read graph keeps unknown properties and positions, drops written-back results, and says when positions are missing', () => {
  const { doc: d, unplaced } = fromGraph('n', {
    nodes: [
      { id: 'a', kind: 'text', text: 't', position: { x: 10, y: 20 }, note: 'kept' },
      { id: 'o', kind: 'output', result: { type: 'image', path: 'x' } },
    ],
    edges: [{ from: 'a', to: 'o', style: 'dashed' }],
  });
  assert.equal(unplaced, true);
  assert.deepEqual(d.nodes[0], { id: 'a', kind: 'text', text: 't', position: { x: 10, y: 20 }, note: 'kept' });
  assert.equal('result' in d.nodes[1]!, false);
  assert.deepEqual(d.edges, [{ from: 'a', to: 'o', style: 'dashed' }]);
  assert.equal(fromGraph('n', { nodes: [{ id: 'a', kind: 'text', text: '', position: { x: 1, y: 2 } }], edges: [] }).unplaced, false);
});

test('the saved body leaves out empty optional fields and fields of another output type, and rounds positions', () => {
  const d = doc();
  d.nodes[0]!.position = { x: 10.4, y: -3.6 };
  d.nodes[2] = { ...d.nodes[2]!, targetLanguage: 'tsx' };
  d.nodes[4] = { ...d.nodes[4]!, aspectRatio: '1:1', model: '' };
  const body = saveBody(d);
  assert.deepEqual(body.graph.nodes[0], { id: 'brief', kind: 'text', position: { x: 10, y: -4 }, text: 'Sale' });
  assert.deepEqual(body.graph.nodes[2], { id: 'p1', kind: 'prompt', position: at, output: 'image', prompt: 'Hero', model: 'local/sketch', aspectRatio: '16:9' });
  assert.deepEqual(body.graph.nodes[4], { id: 'p2', kind: 'prompt', position: at, output: 'code', prompt: 'Page', targetLanguage: 'tsx' });
  assert.deepEqual(body.graph.nodes[5], { id: 'o2', kind: 'output', position: at });
  assert.deepEqual(body.graph.edges, d.edges);
  assert.equal(body.name, 'w');
});

test('connections: the rules the server checks, each refusal saying why', () => {
  const d = doc();
  assert.equal(connectionProblem(d, 'logo', 'p1'), null);
  assert.equal(connectionProblem(d, 'p2', 'o2'), null);
  assert.equal(connectionProblem(d, 'brief', 'p2'), null);
  assert.match(connectionProblem(d, 'p1', 'p1')!, /itself/);
  assert.match(connectionProblem(d, 'brief', 'p1')!, /already feeds/);
  assert.match(connectionProblem(d, 'p1', 'p2')!, /only feed output/);
  assert.match(connectionProblem(d, 'brief', 'o2')!, /fed by a prompt only/);
  assert.match(connectionProblem(d, 'p1', 'brief')!, /only feed output/);
  assert.match(connectionProblem(d, 'o1', 'logo')!, /Image nodes take no inputs/);
  assert.match(connectionProblem(d, 'p2', 'o1')!, /already fed by p1/);
  // o2 -> p1 would close p1 -> o1 -> p2 -> o2 -> p1.
  const looped = { ...d, edges: [...d.edges, { from: 'p2', to: 'o2' }] };
  assert.match(connectionProblem(looped, 'o2', 'p1')!, /cycle/);
  assert.match(connectionProblem(d, 'nope', 'p1')!, /Choose two nodes/);
});

test('a 400\'s details land on the nodes, fields and edges their pointers name, by the order sent', () => {
  const sent = { nodes: ['brief', 'p1', 'o1'], edges: ['brief->p1', 'p1->o1'] };
  const p = placeProblems([
    { path: '/graph/nodes/1/prompt', message: 'node "p1": prompt must be 1 to 50,000 characters' },
    { path: '/graph/nodes/1/model', message: 'node "p1": model "x" is not in the catalog' },
    { path: '/graph/nodes/2', message: 'nodes[2]: an output node needs "id"' },
    { path: '/graph/edges/1', message: 'edge 1 (p1 → o1): output node "o1" is already fed by prompt "p0"' },
    { path: '/name', message: 'name: must be 1 to 200 characters, not only spaces' },
    { path: '/graph', message: 'cycle: a → b → a' },
    { path: '/graph/nodes/9/model', message: 'beyond what was sent' },
  ], sent);
  assert.deepEqual(p.nodes.get('p1'), [{ field: 'prompt', message: 'prompt must be 1 to 50,000 characters' }, { field: 'model', message: 'model "x" is not in the catalog' }]);
  assert.deepEqual(p.nodes.get('o1'), [{ field: '', message: 'an output node needs "id"' }]);
  assert.deepEqual(p.edges.get('p1->o1'), ['output node "o1" is already fed by prompt "p0"']);
  assert.deepEqual(p.name, ['must be 1 to 200 characters, not only spaces']);
  assert.deepEqual(p.general, ['cycle: a → b → a', 'beyond what was sent']);
  assert.equal(problemCount(p), 7);
  // RFC 6901 escapes in a token.
  const escaped = placeProblems([{ path: '/graph/nodes/0/a~1b', message: 'm' }], sent);
  assert.deepEqual(escaped.nodes.get('brief'), [{ field: 'a/b', message: 'm' }]);
});

test('history: steps, a coalesced run of edits, a drag as one step, undo and redo', () => {
  const d0 = doc();
  let h = history(d0);
  const d1 = { ...d0, name: 'w1' };
  const d2 = { ...d0, name: 'w12' };
  h = commit(h, d1, 'name', 1000);
  h = commit(h, d2, 'name', 1500); // same field within the window: one step
  assert.equal(h.past.length, 1);
  assert.equal(h.present, d2);
  const d3 = { ...d2, nodes: [...d2.nodes, newNode(d2, 'text', at)] };
  h = commit(h, d3, 'name', 5000); // past the window: a step of its own
  assert.equal(h.past.length, 2);
  assert.equal(d3.nodes.at(-1)!.id, 'text-1');
  // A drag: moves replace the present, its end adds one step from where it began.
  const moved1 = { ...d3, nodes: d3.nodes.map((n, i) => (i === 0 ? { ...n, position: { x: 5, y: 5 } } : n)) };
  const moved2 = { ...d3, nodes: d3.nodes.map((n, i) => (i === 0 ? { ...n, position: { x: 9, y: 9 } } : n)) };
  h = stepFrom(replace(replace(h, moved1), moved2), d3);
  assert.equal(h.past.length, 3);
  h = undo(h);
  assert.equal(h.present, d3);
  h = undo(undo(h));
  assert.equal(h.present, d0);
  assert.equal(undo(h), h, 'nothing left to undo');
  h = redo(redo(h));
  assert.equal(h.present, d3);
  h = commit(h, d1);
  assert.equal(h.future.length, 0, 'an edit after undo drops what could be redone');
});
