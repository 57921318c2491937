// Shared by the fuzz tests (http.fuzz, workflows.fuzz): a seeded PRNG, raw HTTP that sends paths
// and bodies byte for byte, odd JSON values (NUL, lone surrogates, non-finite number literals,
// deep nesting, huge strings) and in-place mutations of valid bodies.

import http from 'node:http';

// ---------------------------------------------------------------- PRNG (mulberry32)

export function prng(seed: number) {
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
export type Rng = ReturnType<typeof prng>;

// ---------------------------------------------------------------- requests

export interface Req {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}
export interface Res {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export const auth = (k: string | null): Record<string, string> => (k ? { authorization: `Bearer ${k}` } : {});

/**
 * Raw HTTP (node:http) to `base` (the API root): paths and bodies go out byte for byte, unlike
 * fetch's normalisation; at most `concurrency` connections, kept alive.
 */
export function sender(base: string, concurrency: number): (req: Req) => Promise<Res> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const url = new URL(base);
  return (req) => new Promise((resolve, reject) => {
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
export class Raw {
  constructor(readonly text: string) {}
}

export function toJson(v: unknown): string {
  if (v instanceof Raw) return v.text;
  if (Array.isArray(v)) return `[${v.map(toJson).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${toJson(x)}`).join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

export const NUMBERS = ['1e999', '-1e999', '1e308', '-1e308', '2e-400', '-0', '0', '1', '-1', '99999999999999999999999', '1.5', '123456789012345678901234567890e300', '4294967296', '-9007199254740993'];
export const ODD = ['\u0000', '\ud800', '\udfff', '\udfff\ud800', '😀', '\u{10ffff}', '\ufffe', '\u202e', '\r\n', '"', '\\', '\u0001', '%00', '%'];

export function oddString(rng: Rng): string {
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

export function oddValue(rng: Rng, depth = 0): unknown {
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
export function mutate(rng: Rng, v: any): any {
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
