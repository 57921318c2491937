// A seeded, bounded fuzz of the REST surface on the real server: mutated bodies (NUL, lone
// surrogates, astral characters, huge / negative / non-finite number literals, wrong types, deep
// nesting, huge strings, bad UTF-8, malformed JSON, odd content types; small and > 64 KB), ids in
// paths and query strings with percent-encoded garbage. Every response must be < 500, carry an
// x-request-id, and at 400+ be the SPEC error envelope. Replay a failure with the printed seed:
// KILN_FUZZ_SEED=<seed> npm test -- test/http.fuzz.test.ts (KILN_FUZZ_REQUESTS to change the count).

import assert from 'node:assert/strict';
import http from 'node:http';
import { before, test } from 'node:test';
import { createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { example, saveWorkflow } from './_workflows.ts';

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

before(async () => {
  srv = await startServer({ config: { readRpm: 100_000, transformRpm: 100_000 } });
  const a = await createAccount(srv.db.sql, { tier: 'enterprise' });
  key = (await createKey(srv.db.sql, a.id)).key;
  readKey = (await createKey(srv.db.sql, a.id, { scopes: ['read'] })).key;
  workflowId = await saveWorkflow(srv, a.id, example('product-teaser-video'));
  const run = await send({ method: 'POST', path: `/workflows/${workflowId}/runs`, headers: auth(key) });
  runId = JSON.parse(run.body.toString()).id;
  const gen = await send({ method: 'POST', path: '/generations', headers: { ...auth(key), 'content-type': 'application/json' }, body: '{"type":"code","prompt":"hi"}' });
  generationId = JSON.parse(gen.body.toString()).id;
});

// ---------------------------------------------------------------- PRNG (mulberry32)

function prng(seed: number) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  return { next, int, pick, chance: (p: number) => next() < p };
}
type Rng = ReturnType<typeof prng>;

// ---------------------------------------------------------------- requests

interface Req {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}
interface Res {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

const auth = (k: string | null): Record<string, string> => (k ? { authorization: `Bearer ${k}` } : {});

const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });

/** Raw HTTP (node:http): paths and bodies go out byte for byte, unlike fetch's normalisation. */
function send(req: Req): Promise<Res> {
  const url = new URL(srv.base);
  return new Promise((resolve, reject) => {
    const r = http.request(
      { agent, host: url.hostname, port: url.port, method: req.method, path: url.pathname + req.path.replace(/[^\x21-\x7e]/g, encodeURIComponent), headers: req.headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    r.on('error', reject);
    r.end(req.body);
  });
}

// ---------------------------------------------------------------- mutations

/** A JSON value that serialises to raw text (so `1e999`, `-1e999` reach the server as written). */
class Raw {
  constructor(readonly text: string) {}
}

function toJson(v: unknown): string {
  if (v instanceof Raw) return v.text;
  if (Array.isArray(v)) return `[${v.map(toJson).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${toJson(x)}`).join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

const NUMBERS = ['1e999', '-1e999', '1e308', '-1e308', '2e-400', '-0', '0', '1', '-1', '99999999999999999999999', '1.5', '123456789012345678901234567890e300', '4294967296', '-9007199254740993'];
const ODD = ['\u0000', '\ud800', '\udfff', '\udfff\ud800', '😀', '\u{10ffff}', '\ufffe', '\u202e', '\r\n', '"', '\\', '\u0001', '%00', '%'];

function oddString(rng: Rng): string {
  const base = rng.pick(['a red fox', '', 'x', 'local/sketch', 'seed/logo.png', 'image', 'code']);
  switch (rng.int(6)) {
    case 0: return base + rng.pick(ODD);
    case 1: return rng.pick(ODD) + base;
    case 2: return base.slice(0, rng.int(base.length + 1)) + rng.pick(ODD) + base.slice(rng.int(base.length + 1));
    case 3: return '😀'.repeat(rng.pick([1000, 25_000, 50_000, 50_001])).slice(0, rng.chance(0.5) ? undefined : -1); // maybe a split pair
    case 4: return 'z'.repeat(rng.pick([70 * 1024, 200_000]));
    default: return Array.from({ length: 1 + rng.int(20) }, () => String.fromCharCode(rng.int(0x10000))).join('');
  }
}

function oddValue(rng: Rng, depth = 0): unknown {
  switch (rng.int(depth > 2 ? 6 : 9)) {
    case 0: return new Raw(rng.pick(NUMBERS));
    case 1: return oddString(rng);
    case 2: return rng.pick([null, true, false]);
    case 3: return rng.int(1000) - 500;
    case 4: return [];
    case 5: return {};
    case 6: {
      const d = rng.pick([100, 10_000, 100_000]); // deep nesting
      return new Raw('['.repeat(d) + ']'.repeat(d));
    }
    case 7: return Array.from({ length: rng.int(4) }, () => oddValue(rng, depth + 1));
    default: return Object.fromEntries(Array.from({ length: rng.int(4) }, () => [rng.chance(0.3) ? oddString(rng).slice(0, 50) : `k${rng.int(9)}`, oddValue(rng, depth + 1)]));
  }
}

/** Sets, replaces or deletes something somewhere in a copy of `v`. */
function mutate(rng: Rng, v: any): any {
  const copy = structuredClone(v);
  const spots: Array<{ parent: any; key: string | number }> = [];
  const walk = (x: any) => {
    if (Array.isArray(x)) x.forEach((c, i) => { spots.push({ parent: x, key: i }); walk(c); });
    else if (x && typeof x === 'object') for (const k of Object.keys(x)) { spots.push({ parent: x, key: k }); walk(x[k]); }
  };
  walk(copy);
  const strings = spots.filter((p) => typeof p.parent[p.key] === 'string');
  if (strings.length && rng.chance(0.5)) {
    // Poison one string in place and leave the rest valid: what reaches SQL if nothing checks.
    const { parent, key } = rng.pick(strings);
    const s: string = parent[key];
    const at = rng.int(s.length + 1);
    parent[key] = s.slice(0, at) + (rng.chance(0.8) ? rng.pick(ODD.slice(0, 4)) : rng.pick(ODD)) + s.slice(at);
    return copy;
  }
  const n = 1 + rng.int(3);
  for (let i = 0; i < n; i++) {
    const spot = spots.length && rng.chance(0.8) ? rng.pick(spots) : { parent: copy, key: rng.chance(0.5) ? oddString(rng).slice(0, 30) : `extra${i}` };
    if (rng.chance(0.1) && !Array.isArray(spot.parent)) delete spot.parent[spot.key];
    else spot.parent[spot.key] = oddValue(rng);
  }
  return copy;
}

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
