// A seeded, bounded fuzz of the REST surface on the real server: mutated bodies (NUL, lone
// surrogates, astral characters, huge / negative / non-finite number literals, wrong types, deep
// nesting, huge strings, bad UTF-8, malformed JSON, odd content types; small and > 64 KB), ids in
// paths and query strings with percent-encoded garbage. Every response must be < 500, carry an
// x-request-id, and at 400+ be the error envelope. Replay a failure with the printed seed:
// KILN_FUZZ_SEED=<seed> npm test -- test/http.fuzz.test.ts (KILN_FUZZ_REQUESTS to change the count).

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { example, saveWorkflow } from './_workflows.ts';
import { auth, mutate, oddValue, prng, sender, toJson, type Req, type Res, type Rng } from './_fuzz.ts';

const SEED = process.env.KILN_FUZZ_SEED ? Number(process.env.KILN_FUZZ_SEED) >>> 0 : (Math.random() * 2 ** 32) >>> 0;
const REQUESTS = Number(process.env.KILN_FUZZ_REQUESTS ?? 600);
const CONCURRENCY = 8;
const ERROR_TYPES = new Set([
  'invalid_request', 'unauthorized', 'insufficient_scope', 'rate_limited', 'insufficient_quota', 'payment_required', 'not_found', 'server_error',
]);

let srv: TestServer;
let key: string;
let readKey: string;
let workflowId: string;
let runId: string;
let generationId: string;
let send: (req: Req) => Promise<Res>;

before(async () => {
  srv = await startServer({ config: { readRpm: 100_000, transformRpm: 100_000 } });
  send = sender(srv.base, CONCURRENCY);
  const a = await createAccount(srv.db.sql, { tier: 'enterprise' });
  key = (await createKey(srv.db.sql, a.id)).key;
  readKey = (await createKey(srv.db.sql, a.id, { scopes: ['read'] })).key;
  workflowId = await saveWorkflow(srv, a.id, example('product-teaser-video'));
  const run = await send({ method: 'POST', path: `/workflows/${workflowId}/runs`, headers: auth(key) });
  runId = JSON.parse(run.body.toString()).id;
  const gen = await send({ method: 'POST', path: '/generations', headers: { ...auth(key), 'content-type': 'application/json' }, body: '{"type":"code","prompt":"hi"}' });
  generationId = JSON.parse(gen.body.toString()).id;
});

const GEN_BODIES = [
  { type: 'image', prompt: 'a red fox', aspectRatio: '16:9' },
  { type: 'code', prompt: 'a button', targetLanguage: 'tsx', textInputs: [{ content: 'const a = 1', label: 'ctx', language: 'ts' }] },
  { type: 'code', prompt: 'a landing page', screenHtml: true, model: 'local/coder' },
  { type: 'image', prompt: 'logo', model: 'local/sketch', images: [{ url: 'https://example.com/a.png', mediaType: 'image/png' }] },
];
const TRANSFORM_BODIES = [
  { source: 'seed/logo.png', op: 'convert', options: { format: 'png', maxDimension: 32 } },
  { source: 'seed/photo.jpg', op: 'compress', options: { targetBytes: 20_000, maxDimension: 32 } },
  { source: 'seed/transparent.png', op: 'trim' },
];
const CONTENT_TYPES = ['application/json', 'application/json; charset=utf-8', 'application/vnd.kiln+json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', '', 'application/json\u00ff'];

function bodyText(rng: Rng, base: unknown): string | Buffer {
  let value: unknown = rng.chance(0.15) ? base : mutate(rng, base);
  if (rng.chance(0.1)) value = { ...(value as object), pad: 'p'.repeat(70 * 1024) }; // over 64 KB
  if (rng.chance(0.05)) value = oddValue(rng); // not an object at all
  let text = toJson(value);
  switch (rng.int(12)) {
    case 0: text = text.slice(0, rng.int(text.length)); break; // truncated
    case 1: text = text.replace(/:/, rng.pick([':NaN', ':Infinity', ':undefined', ':01', ':.5', ':1e', ':"\t"', ':'])); break; // malformed
    case 2: {
      // Bad UTF-8 bytes inside a string (an encoded surrogate, a lone continuation byte, an overlong NUL).
      const buf = Buffer.from(text);
      const at = Math.max(0, buf.indexOf('"', 1) + 1);
      return Buffer.concat([buf.subarray(0, at), Buffer.from(rng.pick([[0xed, 0xa0, 0x80], [0x80], [0xc0, 0x80], [0xff, 0xfe], [0xf4, 0x90, 0x80, 0x80]])), buf.subarray(at)]);
    }
    case 3: text = rng.pick(['', ' ', 'null', '[]', '"x"', '{}', '{"a":1}{"b":2}', '\ufeff{}']); break;
    default: break;
  }
  return text;
}

const GARBAGE_IDS = ['', 'x', '%00', '%2F', '%2e%2e', '..', '%', '%zz', '%ED%A0%80', '%F0%9F%98%80', '00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-fffffffffffff', '%C0%80', 'a%00b', '%uD800', '9'.repeat(300), '%252F', 'null', '-1', '1e999'];

function pathId(rng: Rng, good: string): string {
  if (rng.chance(0.3)) return good;
  if (rng.chance(0.2)) return good.toUpperCase();
  if (rng.chance(0.2)) return good.slice(0, 35) + rng.pick(['%00', '%ED%A0%80', 'g', '%', '%2F']);
  return rng.pick(GARBAGE_IDS);
}

function queryValue(rng: Rng): string {
  return rng.pick(['1', '100', '101', '0', '-1', '1e999', '1.5', '%00', '%ED%A0%80', '%', '99999999999', '9007199254740993', '', ' 5', '5%20', '0x10', '%F0%9F%98%80', 'NaN']);
}

function makeRequest(rng: Rng): Req {
  const k = rng.chance(0.9) ? key : rng.pick([null, readKey, 'kiln_live_' + 'A'.repeat(40), 'garbage\u00e9']);
  const headers: Record<string, string> = { ...auth(k) };
  if (headers.authorization) headers.authorization = headers.authorization.replace(/[^\x20-\x7e]/g, '?');
  const json = (): Record<string, string> => {
    const ct = rng.chance(0.8) ? 'application/json' : rng.pick(CONTENT_TYPES);
    return ct ? { 'content-type': ct.replace(/[^\x20-\x7e]/g, '?') } : {};
  };
  switch (rng.int(10)) {
    case 0: case 1: case 2: case 3:
      return { method: 'POST', path: '/generations', headers: { ...headers, ...json() }, body: bodyText(rng, rng.pick(GEN_BODIES)) };
    case 4:
      return { method: 'POST', path: '/images/transforms', headers: { ...headers, ...json() }, body: bodyText(rng, rng.pick(TRANSFORM_BODIES)) };
    case 5:
      return { method: 'POST', path: `/workflows/${pathId(rng, workflowId)}/runs`, headers: { ...headers, ...(rng.chance(0.3) ? json() : {}) }, body: rng.chance(0.3) ? bodyText(rng, {}) : undefined };
    case 6:
      return { method: rng.chance(0.9) ? 'GET' : rng.pick(['PUT', 'DELETE', 'PATCH', 'POST']), path: `/generations/${pathId(rng, generationId)}`, headers };
    case 7:
      return { method: 'GET', path: `/workflows/${pathId(rng, workflowId)}/runs/${pathId(rng, runId)}`, headers };
    case 8: {
      const parts = Array.from({ length: rng.int(4) }, () => `${rng.pick(['limit', 'offset', 'limit', 'x', '%00', 'offset%00'])}=${queryValue(rng)}`);
      return { method: 'GET', path: `/workflows${parts.length || rng.chance(0.5) ? '?' : ''}${parts.join('&')}`, headers };
    }
    default:
      return { method: 'GET', path: rng.pick(['/models', '/usage', '/openapi.json', '/nope', '/generations', '/%00', '/models/%ED%A0%80', '//generations', '/generations/']), headers };
  }
}

function describe(req: Req): string {
  const body = req.body === undefined ? '' : ` body(${req.body.length}): ${JSON.stringify(String(req.body).slice(0, 160))}`;
  return `${req.method} ${req.path.slice(0, 160)} ${JSON.stringify(req.headers?.['content-type'] ?? null)}${body}`;
}

test(`fuzz: no 5xx, the error envelope and an x-request-id on every response (seed ${SEED})`, async () => {
  console.log(`fuzz seed ${SEED} (replay: KILN_FUZZ_SEED=${SEED} npm test -- test/http.fuzz.test.ts)`);
  const rng = prng(SEED);
  // Requests are drawn up front from the seed, so a replay sends the same ones.
  const reqs = Array.from({ length: REQUESTS }, () => makeRequest(rng));
  const problems: string[] = [];
  const statuses = new Map<number, number>();
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < reqs.length) {
      const i = next++;
      const req = reqs[i]!;
      const res = await send(req);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const fail = (why: string) => problems.push(`#${i} ${why} — ${res.status} ${res.body.toString().slice(0, 200)} — ${describe(req)}`);
      if (res.status >= 500) fail('5xx');
      if (!res.headers['x-request-id']) fail('no x-request-id');
      if (res.status >= 400) {
        let body: any;
        try {
          body = JSON.parse(res.body.toString());
        } catch {
          fail('error body is not JSON');
          continue;
        }
        const e = body?.error;
        if (!e || Object.keys(body).length !== 1 || !ERROR_TYPES.has(e.type) || typeof e.message !== 'string' || !e.message) fail('not the error envelope');
        if (!/^application\/json/.test(String(res.headers['content-type']))) fail('error content-type is not JSON');
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const ms = performance.now() - t0;
  console.log(`fuzz: ${reqs.length} requests in ${ms.toFixed(0)} ms; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
  assert.deepEqual(problems, [], `seed ${SEED}: ${problems.length} problem(s)\n${problems.slice(0, 20).join('\n')}`);
  assert.ok((statuses.get(400) ?? 0) > 0 && (statuses.get(202) ?? 0) > 0, `seed ${SEED}: the fuzz reaches both validation and success (${JSON.stringify([...statuses])})`);
});
