// Quality search for compress: the largest encode <= target in few full-size encodes. A cheap model
// (bytes of a small sample per quality, times a correction learned from each full encode) picks
// each guess; the bracket of real results bounds it, and bisection takes over if the model stalls.

/** Stop as soon as a result lands in [ACCEPT * target, target]. */
export const ACCEPT = 0.95;
/** Guesses aim at the middle of the accepted window, so small model errors still land in it. */
export const AIM = 0.975;
/** Tile borders make the mosaic denser than the image: full ~ 0.85 * scale * sample (measured). */
export const PRIOR_DENSITY = 0.85;
/** Largest change of log(full/sample) allowed when extrapolating beyond the full encodes. */
const MAX_EXTRAPOLATION = 0.05;
// Knots where the sample is encoded on demand; denser at the top where bytes grow fastest.
const GRID = [1, 5, 10, 20, 30, 40, 50, 60, 70, 75, 80, 85, 90, 93, 96, 98, 100];

export interface SearchSpec {
  target: number;
  qmin: number;
  qmax: number;
  /** Full-size encode; counted against maxFull. */
  full(q: number): Promise<Buffer>;
  /** Encode of the sample; when absent the full encodes themselves are the model. */
  trial?: (q: number) => Promise<Buffer>;
  /**
   * Encode of a tiny image: its bytes stand for the per-file overhead (headers, tables), which
   * does not scale with pixels. Without it the sample/full ratio drifts badly at low quality.
   */
  overhead?: (q: number) => Promise<Buffer>;
  /** Full pixels / sample pixels: the first guess of bytes(full) / bytes(sample), after overhead. */
  scale: number;
  maxFull: number;
  /**
   * The encoder stops growing above some quality (palette PNG once all 256 colours are used), so
   * two fitting encodes of equal size mean the top quality fits too. Not for AVIF/JPEG/WebP,
   * whose neighbouring qualities often share a quantiser and so a size.
   */
  saturates?: boolean;
}

export interface SearchResult {
  data: Buffer;
  q: number;
  withinTarget: boolean;
  fullEncodes: number;
  trialEncodes: number;
  /** Every full encode as [quality, bytes], in order. */
  fullPoints: Array<[number, number]>;
  trialBytes: Map<number, number>;
}

export async function searchQuality(spec: SearchSpec): Promise<SearchResult> {
  const { target, qmin, qmax, trial } = spec;
  const fullBytes = new Map<number, number>();
  const fullPoints: Array<[number, number]> = [];
  const trialBytes = new Map<number, number>();
  let best: { q: number; data: Buffer } | null = null; // largest <= target
  let smallest: { q: number; data: Buffer } | null = null;
  let lo = -Infinity; // highest quality known to fit
  let hi = Infinity; // lowest quality known to be over

  async function full(q: number): Promise<number> {
    const known = fullBytes.get(q);
    if (known !== undefined) return known;
    const data = await spec.full(q);
    const n = data.length;
    fullBytes.set(q, n);
    fullPoints.push([q, n]);
    if (!smallest || n < smallest.data.length) smallest = { q, data };
    if (n <= target) {
      if (!best || n > best.data.length) best = { q, data };
      lo = Math.max(lo, q);
    } else {
      hi = Math.min(hi, q);
    }
    return n;
  }

  const overheadBytes = new Map<number, number>();
  async function overhead(q: number): Promise<number> {
    if (!spec.overhead) return 0;
    let n = overheadBytes.get(q);
    if (n === undefined) {
      n = (await spec.overhead(q)).length;
      overheadBytes.set(q, n);
    }
    return n;
  }

  async function sampleBytes(q: number): Promise<number> {
    if (!trial) return full(q);
    let n = trialBytes.get(q);
    if (n === undefined) {
      n = (await trial(q)).length;
      trialBytes.set(q, n);
    }
    return n;
  }

  // Payload bytes (minus overhead) of the sample; never below 1 so logs stay finite.
  const payload = (bytes: number, q: number) => Math.max(1, bytes - (overheadBytes.get(q) ?? 0));

  // log(full payload / sample payload): measured at each full encode, interpolated in quality.
  function logCorrection(q: number): number {
    if (!trial) return 0;
    const pts = [...fullBytes.keys()]
      .filter((k) => trialBytes.has(k))
      .sort((a, b) => a - b)
      .map((k) => [k, Math.log(payload(fullBytes.get(k)!, k) / payload(trialBytes.get(k)!, k))] as const);
    if (pts.length === 0) return Math.log(spec.scale * PRIOR_DENSITY);
    if (pts.length === 1) return pts[0][1];
    // Between points: interpolate. Outside: extend the nearest pair's trend (a secant step on
    // real encodes), limited so one odd pair cannot throw the guess far away.
    let i = pts.findIndex(([k]) => k >= q);
    if (i <= 0) i = i === 0 ? 1 : pts.length - 1;
    const [q0, l0] = pts[i - 1];
    const [q1, l1] = pts[i];
    const lin = l0 + ((l1 - l0) * (q - q0)) / (q1 - q0);
    const near = q < q0 ? l0 : q > q1 ? l1 : lin;
    return Math.min(near + MAX_EXTRAPOLATION, Math.max(near - MAX_EXTRAPOLATION, lin));
  }

  async function logPred(q: number): Promise<number> {
    const s = await sampleBytes(q);
    if (!trial) return Math.log(s);
    const o = await overhead(q);
    return Math.log(payload(s, q) * Math.exp(logCorrection(q)) + o);
  }

  /** Largest integer q in [a, b] the model predicts at <= bytes (a when none). */
  async function predict(bytes: number, a: number, b: number): Promise<number> {
    const goal = Math.log(bytes);
    const knots = [...new Set([a, b, ...GRID, ...trialBytes.keys()])].filter((k) => k >= a && k <= b).sort((x, y) => x - y);
    let i = -1; // knots[i] predicted to fit (virtual at -1)
    let j = knots.length; // knots[j] predicted over (virtual at end)
    const cache = new Map<number, number>();
    const at = async (k: number) => {
      if (!cache.has(k)) cache.set(k, await logPred(knots[k]));
      return cache.get(k)!;
    };
    while (j - i > 1) {
      const m = (i + j) >> 1;
      if ((await at(m)) <= goal) i = m;
      else j = m;
    }
    if (i < 0) return a;
    if (j >= knots.length) return b;
    const [l0, l1] = [await at(i), await at(j)];
    const t = l1 > l0 ? (goal - l0) / (l1 - l0) : 0;
    return Math.min(knots[j] - 1, Math.max(knots[i], Math.floor(knots[i] + t * (knots[j] - knots[i]))));
  }

  // Identical sizes at two qualities: a palette encoder that already uses all its colours.
  const saturated = (b: { q: number; data: Buffer }) =>
    fullPoints.some(([k, n]) => k !== b.q && n === b.data.length);

  // Two over-target encodes of equal size: the model is in a plateau it cannot see into.
  const flatOver = () => {
    const over = fullPoints.filter(([, n]) => n > target).map(([, n]) => n);
    return new Set(over).size < over.length;
  };

  let sameSide = 0;
  let lastFit: boolean | null = null;
  let lastMiss = Infinity;
  for (let guard = 0; guard < 40 && fullPoints.length < spec.maxFull; guard++) {
    const b0 = best as { q: number; data: Buffer } | null;
    if (b0 && (b0.data.length >= ACCEPT * target || b0.q >= qmax)) break;
    if (fullBytes.has(qmin) && fullBytes.get(qmin)! > target) break; // unreachable
    const a = lo === -Infinity ? qmin : lo + 1;
    const b = hi === Infinity ? qmax : hi - 1;
    if (a > b) break; // adjacent qualities bracket the target (or sizes were not monotonic)
    let q: number;
    if (!b0 && fullPoints.length === spec.maxFull - 1) {
      q = qmin; // last encode left: the smallest possible encode must be known
    } else if (spec.saturates && b0 && hi === Infinity && saturated(b0)) {
      q = qmax; // two qualities gave the same bytes: the encoder saturated, so the top fits too
    } else if (sameSide >= 3 || (sameSide === 2 && lo > -Infinity && hi < Infinity) || (spec.saturates && lastFit === false && flatOver())) {
      q = Math.floor((a + b) / 2); // model keeps missing on one side: bisect the bracket
    } else {
      q = await predict(AIM * target, a, b);
      if (fullPoints.length >= spec.maxFull) break; // the model itself spent the budget
    }
    if (fullBytes.has(q)) continue; // bounds moved while the model evaluated; guess again
    // The sample's bytes at q pin the correction there; encode them alongside the full encode.
    const [n] = await Promise.all([full(q), trial && sampleBytes(q), trial && overhead(q)]);
    const fit = n <= target;
    // Like Brent's method: the model may keep the lead while each step at least halves the miss.
    const miss = Math.abs(Math.log(n / (AIM * target)));
    sameSide = fit === lastFit && miss > lastMiss / 2 ? sameSide + 1 : 1;
    lastFit = fit;
    lastMiss = miss;
  }

  type Kept = { q: number; data: Buffer };
  const chosen = ((best as Kept | null) ?? (smallest as Kept | null))!;
  return {
    data: chosen.data,
    q: chosen.q,
    withinTarget: best !== null,
    fullEncodes: fullPoints.length,
    trialEncodes: trialBytes.size,
    fullPoints,
    trialBytes,
  };
}
