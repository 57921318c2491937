// A seeded fuzz of workflow saves on the real server: graphs with wrong types, missing and extra
// fields, rewired and dangling edges, cycles, unknown models, too many nodes or edges, huge
// strings, NUL characters and lone surrogates (in values and in property names), non-finite
// numbers and deep nesting, through POST /workflows and PUT /workflows/{id} (with good, stale and
// garbage If-Match and Idempotency-Key headers), plus reads and deletes of garbage ids. No
// response may be a 5xx; every error is the envelope, and a 400 of a save lists its problems as
// `details` with JSON pointers. Replay: KILN_FUZZ_SEED=<seed> npm test -- test/workflows.fuzz.test.ts.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { auth, mutate, oddString, oddValue, prng, Raw, sender, toJson, type Req, type Res, type Rng } from './_fuzz.ts';
import { createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { example } from './_workflows.ts';

const SEED = process.env.KILN_FUZZ_SEED ? Number(process.env.KILN_FUZZ_SEED) >>> 0 : (Math.random() * 2 ** 32) >>> 0;
const REQUESTS = Number(process.env.KILN_FUZZ_REQUESTS ?? 400);
const CONCURRENCY = 8;
const ERROR_TYPES = new Set(['invalid_request', 'unauthorized', 'insufficient_scope', 'rate_limited', 'not_found', 'precondition_failed', 'idempotency_conflict']);

let srv: TestServer;
let key: string;
let ids: string[];
let send: (req: Req) => Promise<Res>;

const SMALL = {
  nodes: [
    { id: 'brief', kind: 'text', text: 'Autumn sale' },
    { id: 'logo', kind: 'image', url: 'seed/logo.png' },
    { id: 'p1', kind: 'prompt', output: 'image', prompt: 'Hero', model: 'local/sketch', aspectRatio: '16:9' },
    { id: 'o1', kind: 'output', label: 'Hero', platform: 'x' },
    { id: 'p2', kind: 'prompt', output: 'code', targetLanguage: 'tsx', prompt: 'Landing' },
    { id: 'o2', kind: 'output', result: { type: 'code', code: 'kept' } },
  ],
  edges: [{ from: 'brief', to: 'p1' }, { from: 'logo', to: 'p1' }, { from: 'p1', to: 'o1' }, { from: 'o1', to: 'p2' }, { from: 'p2', to: 'o2' }],
};
const GRAPHS = [SMALL, example('social-campaign'), example('landing-from-image'), example('product-teaser-video')];

before(async () => {
  srv = await startServer({ config: { readRpm: 100_000 } });
  send = sender(srv.base, CONCURRENCY);
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  key = (await createKey(srv.db.sql, a.id)).key;
  ids = [];
  for (let i = 0; i < 3; i++) {
    const res = await send({ method: 'POST', path: '/workflows', headers: { ...auth(key), 'content-type': 'application/json' }, body: JSON.stringify({ name: `fuzz ${i}`, graph: SMALL }) });
    assert.equal(res.status, 201, res.body.toString());
    ids.push(JSON.parse(res.body.toString()).id);
  }
});

/** Graph-shaped mischief the generic mutations rarely hit. */
function graphMutation(rng: Rng, base: any): any {
  const g = structuredClone(base);
  const nodeIds = g.nodes.map((n: any) => n.id);
  switch (rng.int(10)) {
    case 0: g.nodes.push(structuredClone(rng.pick(g.nodes))); break; // a duplicate id
    case 1: g.edges.push({ from: rng.pick(nodeIds), to: rng.pick([...nodeIds, 'ghost', '', 'a/b~c']) }); break; // rewired, dangling, cycles
    case 2: g.edges.reverse().forEach((e: any) => ([e.from, e.to] = [e.to, e.from])); break; // every edge backwards
    case 3: rng.pick<any>(g.nodes.filter((n: any) => n.kind === 'prompt')).model = rng.pick(['local/coder', 'local/sketch', 'local/vector', 'no/such', '', 7]); break;
    case 4: g.nodes = Array.from({ length: rng.pick([201, 1000, 5000]) }, (_, i) => ({ id: `t${i}`, kind: 'text', text: 'x' })); break;
    case 5: g.edges = Array.from({ length: rng.pick([1001, 6000]) }, () => ({ from: rng.pick(nodeIds), to: rng.pick(nodeIds) })); break;
    case 6: {
      const d = rng.pick([31, 40, 1000, 100_000]); // deep nesting inside a node
      rng.pick<any>(g.nodes).ui = new Raw('{"a":'.repeat(d) + '1' + '}'.repeat(d));
      break;
    }
    case 7: rng.pick<any>(g.nodes).text = 'w'.repeat(rng.pick([50_001, 300_000])); break;
    case 8: rng.pick<any>(g.nodes)[rng.pick(['\u0000', '\ud800', 'ok'])] = rng.pick(['\u0000', '\udfff', 'v']); break; // odd property names and values
    default: g[rng.pick(['nodes', 'edges'])] = oddValue(rng); break;
  }
  return g;
}

function saveBody(rng: Rng): string {
  const graph = rng.pick(GRAPHS);
  let body: any = { name: rng.chance(0.8) ? 'Fuzzed' : rng.pick([oddString(rng), '', 7, null, 'x'.repeat(201)]), graph };
  const roll = rng.int(10);
  if (roll < 4) body.graph = graphMutation(rng, graph);
  else if (roll < 8) body = mutate(rng, body);
  else if (roll < 9) body = oddValue(rng);
  let text = toJson(body);
  if (rng.chance(0.05)) text = text.slice(0, rng.int(text.length)); // truncated
  return text;
}

function ifMatch(rng: Rng): Record<string, string> {
  if (rng.chance(0.4)) return {};
  return { 'if-match': rng.pick(['"1"', '"2"', '"99"', '*', 'W/"1"', '1', '"1", "2"', '""', '"\u00ff"', ' ', '"9999999999999999999999"']) };
}

function idempotency(rng: Rng): Record<string, string> {
  if (rng.chance(0.7)) return {};
  return { 'idempotency-key': rng.pick(['k1', 'k2', 'k3', 'x'.repeat(300), ' ', '\u00e9']).replace(/[^\x20-\x7e]/g, '?') };
}

function makeRequest(rng: Rng): Req {
  const json = { ...auth(key), 'content-type': 'application/json' };
  const id = rng.chance(0.85) ? rng.pick(ids) : rng.pick(['nope', '00000000-0000-4000-8000-000000000000', '%00', ids[0]!.toUpperCase(), '%ED%A0%80']);
  switch (rng.int(10)) {
    case 0: case 1: case 2: case 3:
      return { method: 'POST', path: '/workflows', headers: { ...json, ...idempotency(rng) }, body: saveBody(rng) };
    case 4: case 5: case 6: case 7:
      return { method: 'PUT', path: `/workflows/${id}`, headers: { ...json, ...ifMatch(rng) }, body: saveBody(rng) };
    case 8:
      return { method: 'GET', path: `/workflows/${id}`, headers: auth(key) };
    default:
      // Deletes only of ids that are not the fuzzed ones (those must stay for the PUTs).
      return { method: 'DELETE', path: `/workflows/${rng.pick(['nope', '00000000-0000-4000-8000-000000000000', '%00'])}`, headers: { ...auth(key), ...ifMatch(rng) } };
  }
}

test(`fuzz: workflow saves never get a 5xx; errors are the envelope, a refused save lists pointers (seed ${SEED})`, async () => {
  console.log(`fuzz seed ${SEED} (replay: KILN_FUZZ_SEED=${SEED} npm test -- test/workflows.fuzz.test.ts)`);
  const rng = prng(SEED);
  const reqs = Array.from({ length: REQUESTS }, () => makeRequest(rng));
  const problems: string[] = [];
  const statuses = new Map<number, number>();
  let withDetails = 0;
  let next = 0;
  const worker = async () => {
    while (next < reqs.length) {
      const i = next++;
      const req = reqs[i]!;
      const res = await send(req);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const fail = (why: string) => problems.push(`#${i} ${why} — ${res.status} ${res.body.toString().slice(0, 300)} — ${req.method} ${req.path} ${String(req.body ?? '').slice(0, 200)}`);
      if (res.status >= 500) fail('5xx');
      if (res.status < 400) continue;
      let e: any;
      try {
        e = JSON.parse(res.body.toString()).error;
      } catch {
        fail('error body is not JSON');
        continue;
      }
      if (!e || !ERROR_TYPES.has(e.type) || typeof e.message !== 'string' || !e.message) fail('not the error envelope');
      if (e?.details !== undefined) {
        withDetails++;
        const ok = Array.isArray(e.details) && e.details.length > 0 &&
          e.details.every((d: any) => typeof d.message === 'string' && d.message && typeof d.path === 'string' && (d.path === '' || d.path.startsWith('/')));
        if (!ok) fail('details are not [{ path: a JSON pointer, message }]');
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  console.log(`fuzz: ${reqs.length} requests; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}; ${withDetails} with details`);
  assert.deepEqual(problems, [], `seed ${SEED}: ${problems.length} problem(s)\n${problems.slice(0, 20).join('\n')}`);
  assert.ok((statuses.get(201) ?? 0) + (statuses.get(200) ?? 0) > 0 && withDetails > 0, `seed ${SEED}: the fuzz reaches saves and refusals with details`);
});
