// Graph validation and run planning: a table of bad graphs (each error names the offending node or
// edge), the shipped examples against the real seeded catalog, and the units a plan derives.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { listModels, type CatalogModel } from '../src/billing/catalog.ts';
import { checkGraph } from '../src/workflows/check.ts';
import { planRun } from '../src/workflows/plan.ts';
import { SAVE_LIMITS, validateGraph } from '../src/workflows/validate.ts';
import { createTestDb, testConfig } from './_setup.ts';
import { EXAMPLES } from './_workflows.ts';

const model = (id: string, category: CatalogModel['category'], images: boolean): CatalogModel => ({
  id, name: id, category, provider: 'local', upstream: null, supports_image_input: images, input_modalities: ['text'],
  output_modalities: ['text'], cost: { micros_per_image: 1000, input_micros_per_token: 1, output_micros_per_token: 1 },
  maxOutputTokens: 100, markup: 1, enabled: true,
});
const models = new Map([model('img', 'image', true), model('txt', 'text', true), model('vec', 'svg', false), model('blind', 'text', false)].map((m) => [m.id, m]));
const opts = { models, defaultImageModel: 'img', defaultCodeModel: 'txt', checkImage: (u: string) => (u.startsWith('https://') || u.startsWith('seed/') ? null : 'url must be an https:// URL, a data: URI or a store path') };

const text = (id: string) => ({ id, kind: 'text', text: `text of ${id}` });
const prompt = (id: string, output = 'code', extra: object = {}) => ({ id, kind: 'prompt', output, prompt: `do ${id}`, ...extra });
const out = (id: string, extra: object = {}) => ({ id, kind: 'output', ...extra });
const e = (from: string, to: string) => ({ from, to });

const cases: Array<[string, unknown, RegExp]> = [
  ['not an object', 'graph', /graph: /],
  ['unknown kind', { nodes: [{ id: 'a', kind: 'sticker' }], edges: [] }, /node "a": kind must be one of text, image, prompt, output/],
  ['prompt without text', { nodes: [{ id: 'p1', kind: 'prompt', output: 'code', prompt: '' }], edges: [] }, /node "p1": prompt must be 1 to 50,000 characters/],
  ['bad output type', { nodes: [prompt('p1', 'audio')], edges: [] }, /node "p1": output must be one of image, code, screen, design, video/],
  ['bad platform', { nodes: [out('o1', { platform: 'myspace' })], edges: [] }, /node "o1": platform must be one of x, linkedin/],
  ['edge without to', { nodes: [text('a')], edges: [{ from: 'a' }] }, /edge 0 \(a → \?\): /],
  ['duplicate id', { nodes: [text('a'), text('b'), text('a')], edges: [] }, /node "a": duplicate id \(nodes\[2\]\)/],
  ['dangling edge', { nodes: [text('a'), prompt('p1')], edges: [e('a', 'p1'), e('a', 'nope')] }, /edge 1 \(a → nope\): "nope" is not a node/],
  ['duplicate edge', { nodes: [text('a'), prompt('p1')], edges: [e('a', 'p1'), e('a', 'p1')] }, /edge 1 \(a → p1\): duplicates edge 0/],
  ['self edge', { nodes: [prompt('p1')], edges: [e('p1', 'p1')] }, /edge 0 \(p1 → p1\): a node cannot feed itself/],
  ['cycle', { nodes: [prompt('p1'), out('o1'), prompt('p2'), out('o2')], edges: [e('p1', 'o1'), e('o1', 'p2'), e('p2', 'o2'), e('o2', 'p1')] }, /cycle: (p1 → o1 → p2 → o2 → p1|o1 → p2 → o2 → p1 → o1|p2 → o2 → p1 → o1 → p2|o2 → p1 → o1 → p2 → o2)/],
  ['prompt into prompt', { nodes: [prompt('p1'), prompt('p2')], edges: [e('p1', 'p2')] }, /edge 0 \(p1 → p2\): a prompt node can only feed output nodes/],
  ['text into output', { nodes: [text('a'), out('o1')], edges: [e('a', 'o1')] }, /edge 0 \(a → o1\): an output node can only be fed by a prompt node/],
  ['edge into a text node', { nodes: [prompt('p1'), out('o1'), text('t')], edges: [e('p1', 'o1'), e('o1', 't')] }, /edge 1 \(o1 → t\): text nodes take no inputs/],
  ['two producers', { nodes: [prompt('p1'), prompt('p2'), out('o1')], edges: [e('p1', 'o1'), e('p2', 'o1')] }, /edge 1 \(p2 → o1\): output node "o1" is already fed by prompt "p1"/],
  ['text model for an image', { nodes: [prompt('p1', 'image', { model: 'txt' })], edges: [] }, /node "p1": model "txt" is a text model and cannot produce image output/],
  ['image model for code', { nodes: [prompt('p1', 'code', { model: 'img' })], edges: [] }, /node "p1": model "img" is an image model and cannot produce code output/],
  ['svg model for a screen', { nodes: [prompt('p1', 'screen', { model: 'vec' })], edges: [] }, /node "p1": model "vec" is an SVG model and cannot produce screen output/],
  ['svg model with tsx', { nodes: [prompt('p1', 'code', { model: 'vec', targetLanguage: 'tsx' })], edges: [] }, /node "p1": model "vec" produces SVG only/],
  ['unknown model', { nodes: [prompt('p1', 'code', { model: 'nope/x' })], edges: [] }, /node "p1": model "nope\/x" is not in the catalog/],
  ['image input to a blind model', { nodes: [{ id: 'logo', kind: 'image', url: 'seed/logo.png' }, prompt('p1', 'code', { model: 'blind' })], edges: [e('logo', 'p1')] }, /node "p1": model "blind" does not accept image inputs, but 1 image input feeds it/],
  ['generated image into a blind model', { nodes: [prompt('p0', 'image'), out('o0'), prompt('p1', 'design', { model: 'vec' })], edges: [e('p0', 'o0'), e('o0', 'p1')] }, /node "p1": model "vec" does not accept image inputs/],
  ['too many images', { nodes: [...Array.from({ length: 11 }, (_, i) => ({ id: `i${i}`, kind: 'image', url: 'seed/x.png' })), prompt('p1', 'image')], edges: Array.from({ length: 11 }, (_, i) => e(`i${i}`, 'p1')) }, /node "p1": at most 10 image inputs, got 11/],
  ['output nobody produces', { nodes: [out('o1'), prompt('p1')], edges: [e('o1', 'p1')] }, /node "p1": input "o1" is an output node that no prompt produces and that holds no result/],
  ['bad image url', { nodes: [{ id: 'logo', kind: 'image', url: 'http://example.com/a.png' }], edges: [] }, /node "logo": url must be an https:\/\/ URL/],
];

test('invalid graphs are rejected with messages naming the node or edge', () => {
  for (const [name, graph, want] of cases) {
    const r = validateGraph(graph, opts);
    assert.equal(r.ok, false, `${name}: expected a problem`);
    if (!r.ok) assert.match(r.issues.map((i) => i.message).join('\n'), want, name);
  }
});

test('every problem is collected, each with a JSON pointer to where it is', () => {
  const graph = {
    nodes: [
      text('brief'),
      { id: 'p1', kind: 'prompt', output: 'audio', prompt: 'x' }, // bad output type: left out of the later checks
      prompt('p2', 'image', { model: 'txt' }),
      out('o2'),
      prompt('p3', 'code', { model: 'nope/x' }),
      text('brief'),
      { id: 'logo', kind: 'image', url: 'http://example.com/a.png' },
      prompt('p4', 'code', { model: 'vec', targetLanguage: 'tsx' }),
      out('o4'),
      out('lonely'),
      prompt('p5'),
      { id: 'a/b~c', kind: 'sticker' },
    ],
    edges: [e('brief', 'p1'), e('p2', 'o2'), e('brief', 'ghost'), { from: 'p3' }, e('p4', 'o4'), e('o4', 'p4'), e('lonely', 'p5')],
  };
  const r = validateGraph(graph, opts);
  assert.equal(r.ok, false);
  if (r.ok) return;
  const byPath = new Map(r.issues.map((i) => [i.path, i.message]));
  const want: Array<[string, RegExp]> = [
    ['/nodes/1/output', /^node "p1": output must be one of/],
    ['/nodes/2/model', /^node "p2": model "txt" is a text model and cannot produce image output/],
    ['/nodes/4/model', /^node "p3": model "nope\/x" is not in the catalog/],
    ['/nodes/5/id', /^node "brief": duplicate id \(nodes\[5\]\)/],
    ['/nodes/6/url', /^node "logo": url must be an https:\/\/ URL/],
    ['/nodes/7/targetLanguage', /^node "p4": model "vec" produces SVG only/],
    ['/nodes/11/kind', /^node "a\/b~c": kind must be one of/],
    ['/edges/2/to', /^edge 2 \(brief → ghost\): "ghost" is not a node/],
    ['/edges/3/to', /^edge 3 \(p3 → \?\): /],
    ['/edges/5', /^cycle: /],
    ['/edges/6', /^node "p5": input "lonely" is an output node that no prompt produces/],
  ];
  for (const [path, re] of want) assert.match(byPath.get(path) ?? `(nothing at ${path}; got ${JSON.stringify(r.issues)})`, re, path);
  // The edge into the malformed p1 is not reported again as dangling.
  assert.ok(!r.issues.some((i) => i.path.startsWith('/edges/0')), JSON.stringify(r.issues));
  assert.equal(r.issues.length, want.length, JSON.stringify(r.issues, null, 1));
});

test('limits: nodes, edges, bytes and nesting are refused before anything else', () => {
  const many = (n: number) => Array.from({ length: n }, (_, i) => text(`t${i}`));
  const save = { ...opts, limits: SAVE_LIMITS };
  const check = (graph: unknown, path: string, re: RegExp) => {
    const r = validateGraph(graph, save);
    assert.equal(r.ok, false);
    if (!r.ok) assert.deepEqual(r.issues.map((i) => i.path), [path]), assert.match(r.issues[0]!.message, re);
  };
  assert.ok(validateGraph({ nodes: many(200), edges: [] }, save).ok);
  check({ nodes: many(201), edges: [] }, '/nodes', /at most 200 nodes, this one has 201/);
  check({ nodes: [], edges: Array.from({ length: 1001 }, () => e('a', 'b')) }, '/edges', /at most 1000 edges/);
  check({ nodes: [{ ...text('big'), text: 'x'.repeat(50_000) }, ...Array.from({ length: 5 }, (_, i) => ({ ...text(`b${i}`), text: 'y'.repeat(50_000) }))], edges: [] }, '', /at most 256 KB of JSON/);
  let deep: unknown = 1;
  for (let i = 0; i < 40; i++) deep = { x: deep };
  check({ nodes: [{ ...text('t'), ui: deep }], edges: [] }, '/nodes/0/ui/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x', /nested more than 32 levels/);
  // Written-back results are not counted: they are the service's.
  const withResults = { nodes: [prompt('p1'), { ...out('o1'), result: { type: 'code', code: 'z'.repeat(300_000) } }], edges: [e('p1', 'o1')] };
  assert.ok(validateGraph(withResults, save).ok);
  // At run start the stored graph's older, larger caps apply.
  assert.ok(validateGraph({ nodes: many(201), edges: [] }, opts).ok);
});

test('valid graphs pass: defaults, video without a model, stored results as inputs, unknown UI fields kept', () => {
  const graph = {
    nodes: [
      { ...text('brief'), position: { x: 1, y: 2 } },
      prompt('p1', 'image'), out('o1'),
      prompt('p2', 'screen'), out('o2', { label: 'Screen', platform: 'x' }),
      prompt('v', 'video', { model: 'no-such-video-model' }), out('ov'),
      out('kept', { result: { type: 'code', code: 'from an earlier run' } }), prompt('p3', 'design', { model: 'vec' }), out('o3'),
    ],
    edges: [e('brief', 'p1'), e('p1', 'o1'), e('o1', 'p2'), e('brief', 'p2'), e('p2', 'o2'), e('o2', 'v'), e('v', 'ov'), e('kept', 'p3'), e('p3', 'o3')],
  };
  const r = validateGraph(graph, opts);
  assert.ok(r.ok, r.ok ? '' : r.issues.map((i) => i.message).join('\n'));
  assert.deepEqual((r.value.graph.nodes[0] as any).position, { x: 1, y: 2 });

  const units = planRun(r.value);
  const by = new Map(units.map((u) => [u.output, u]));
  assert.deepEqual([...by.keys()], ['o1', 'o2', 'ov', 'o3']);
  assert.equal(by.get('o1')!.deps, 0);
  assert.deepEqual(by.get('o1')!.dependents, ['o2']);
  assert.equal(by.get('o1')!.spec.model!.id, 'img');
  assert.deepEqual(by.get('o2')!.refs, ['o1']);
  assert.deepEqual(by.get('o2')!.dependents, [], 'a video consumer is skipped, never waited on');
  assert.equal(by.get('o2')!.spec.screenHtml, true);
  assert.deepEqual(by.get('o2')!.spec.inputs.map((i) => [i.kind, i.label]), [['ref', 'o1'], ['text', 'brief'], ['text', 'Platform']]);
  assert.equal(by.get('ov')!.type, 'video');
  assert.equal(by.get('ov')!.spec.model, null);
  assert.deepEqual(by.get('o3')!.spec.inputs, [{ kind: 'text', from: 'kept', label: 'kept', content: 'from an earlier run' }]);
  assert.equal(by.get('o3')!.spec.targetLanguage, 'svg');
});

test('a prompt with several outputs runs once per output; a fan-in waits for every upstream output', () => {
  const graph = {
    nodes: [prompt('root'), out('r'), ...['a', 'b', 'c'].flatMap((x) => [prompt(`p${x}`), out(`o${x}`)]), prompt('sink'), out('s1'), out('s2')],
    edges: [e('root', 'r'), ...['a', 'b', 'c'].flatMap((x) => [e('r', `p${x}`), e(`p${x}`, `o${x}`), e(`o${x}`, 'sink')]), e('sink', 's1'), e('sink', 's2')],
  };
  const r = validateGraph(graph, opts);
  assert.ok(r.ok);
  const by = new Map(planRun(r.value).map((u) => [u.output, u]));
  assert.deepEqual(by.get('r')!.dependents, ['oa', 'ob', 'oc']);
  assert.deepEqual(by.get('oa')!.dependents, ['s1', 's2']);
  assert.equal(by.get('s1')!.deps, 3);
  assert.equal(by.get('s2')!.deps, 3);
  assert.equal(by.get('s1')!.prompt, 'sink');
});

test('the shipped examples are valid against the seeded catalog', async () => {
  const db = await createTestDb();
  const config = testConfig();
  const catalog = await listModels(db.sql, config.defaultMarkup);
  const files = fs.readdirSync(EXAMPLES).filter((f) => f.endsWith('.json'));
  assert.ok(files.length >= 3);
  const kinds = new Set<string>();
  for (const f of files) {
    const r = checkGraph(config, catalog, '00000000-0000-4000-8000-000000000000', JSON.parse(fs.readFileSync(path.join(EXAMPLES, f), 'utf8')));
    assert.ok(r.ok, `${f}: ${r.ok ? '' : r.issues.map((i) => i.message).join('; ')}`);
    for (const n of r.value.graph.nodes) {
      if (n.kind === 'prompt') kinds.add(n.output);
      if (n.kind === 'output' && n.platform) kinds.add('platform');
      if (n.kind === 'image') kinds.add('image-node');
    }
  }
  for (const k of ['image', 'code', 'screen', 'design', 'video', 'platform', 'image-node']) assert.ok(kinds.has(k), `examples cover ${k}`);
});
