// Deterministic synthetic images (photo-like, logo, transparent) for the seed files, tests and bench.
// Generated in code so nothing binary has to be fetched and every run sees the same pixels.

/** Small seeded PRNG (mulberry32): same seed, same image, on every machine. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface RawImage { data: Buffer; width: number; height: number; channels: 3 | 4 }

// Value noise on a coarse lattice, bilinearly smoothed: gives the low-frequency "texture" a
// photo has, which is what makes encoders behave photo-like (unlike flat synthetic art).
function valueNoise(width: number, height: number, cell: number, rand: () => number): Float32Array {
  const gw = Math.ceil(width / cell) + 2;
  const gh = Math.ceil(height / cell) + 2;
  const grid = new Float32Array(gw * gh);
  for (let i = 0; i < grid.length; i++) grid[i] = rand() * 2 - 1;
  const out = new Float32Array(width * height);
  for (let y = 0; y < height; y++) {
    const gy = y / cell;
    const y0 = Math.floor(gy);
    const fy = gy - y0;
    const sy = fy * fy * (3 - 2 * fy);
    for (let x = 0; x < width; x++) {
      const gx = x / cell;
      const x0 = Math.floor(gx);
      const fx = gx - x0;
      const sx = fx * fx * (3 - 2 * fx);
      const a = grid[y0 * gw + x0];
      const b = grid[y0 * gw + x0 + 1];
      const c = grid[(y0 + 1) * gw + x0];
      const d = grid[(y0 + 1) * gw + x0 + 1];
      out[y * width + x] = (a + (b - a) * sx) * (1 - sy) + (c + (d - c) * sx) * sy;
    }
  }
  return out;
}

const clamp8 = (v: number) => (v < 0 ? 0 : v > 255 ? 255 : v | 0);

/** Photo-like RGB: sky/ground gradients, multi-octave texture, soft shapes, sensor-like grain. */
export function photoLike(width: number, height: number, seed = 1): RawImage {
  const rand = prng(seed);
  const n1 = valueNoise(width, height, Math.max(8, width / 6), rand);
  const n2 = valueNoise(width, height, Math.max(4, width / 40), rand);
  const n3 = valueNoise(width, height, 3, rand);
  const horizon = height * (0.45 + rand() * 0.15);
  const blobs = Array.from({ length: 14 }, () => ({
    x: rand() * width, y: rand() * height, r: (0.03 + rand() * 0.12) * Math.min(width, height),
    c: [rand() * 255, rand() * 255, rand() * 255], soft: 0.15 + rand() * 0.5,
  }));
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      let r: number, g: number, b: number;
      if (y < horizon) {
        const t = y / horizon;
        r = 90 + 110 * t; g = 140 + 80 * t; b = 230 - 20 * t;
      } else {
        const t = (y - horizon) / (height - horizon);
        r = 110 - 50 * t; g = 120 - 40 * t; b = 60 - 20 * t;
      }
      const tex = n1[i] * 40 + n2[i] * (y < horizon ? 10 : 35) + n3[i] * (y < horizon ? 3 : 14);
      r += tex; g += tex * 0.9; b += tex * 0.7;
      for (const o of blobs) {
        const d = Math.hypot(x - o.x, y - o.y) / o.r;
        if (d < 1) {
          const w = d < 1 - o.soft ? 1 : (1 - d) / o.soft;
          const shade = 1 - 0.35 * d;
          r += (o.c[0] * shade - r) * w; g += (o.c[1] * shade - g) * w; b += (o.c[2] * shade - b) * w;
        }
      }
      const grain = (rand() + rand() + rand() - 1.5) * 9;
      data[i * 3] = clamp8(r + grain);
      data[i * 3 + 1] = clamp8(g + grain);
      data[i * 3 + 2] = clamp8(b + grain);
    }
  }
  return { data, width, height, channels: 3 };
}

/**
 * A flat-colour "logo" (ringed disc and a wordmark of bars) on a uniform background. The content
 * box is exactly [margin, width - margin) x [margin, height - margin), so trim results are exact.
 */
export function logoLike(width: number, height: number, margin: number, background: [number, number, number] = [255, 255, 255]): RawImage {
  const data = Buffer.alloc(width * height * 3);
  const x0 = margin, y0 = margin, x1 = width - margin, y1 = height - margin;
  const h = y1 - y0;
  const rad = h / 2, cx = x0 + rad, cy = y0 + rad;
  const textX = x0 + h * 1.15;
  const blue: [number, number, number] = [20, 60, 160];
  const ink: [number, number, number] = [30, 30, 30];
  const orange: [number, number, number] = [240, 150, 20];
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let c = background;
      const d = Math.hypot(x + 0.5 - cx, y + 0.5 - cy);
      if (d <= rad) {
        c = d > rad * 0.8 ? blue : d < rad * 0.45 ? orange : [250, 250, 250];
      } else if (x >= textX && x < x1 && y >= y0 && y < y1) {
        // Five bands: rules at the top and bottom span to the margin; the middle band is "letters".
        const band = Math.floor(((y - y0) / h) * 5);
        if (band === 0 || band === 4) c = blue;
        else if (band === 2 && (x - textX) % (h * 0.3) < h * 0.22 && x < x1 - h * 0.4) c = ink;
      }
      data.set(c, (y * width + x) * 3);
    }
  }
  return { data, width, height, channels: 3 };
}

/** RGBA with fully transparent margins and a soft-edged, gradient-filled, half-transparent disc. */
export function transparentLike(width: number, height: number, margin: number): RawImage {
  const data = Buffer.alloc(width * height * 4);
  const cx = width / 2, cy = height / 2;
  const rad = Math.min(width, height) / 2 - margin;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const d = Math.hypot(x - cx, y - cy);
      const o = (y * width + x) * 4;
      if (d > rad) continue; // all four channels stay 0: transparent black
      const edge = Math.min(1, (rad - d) / 6);
      data[o] = clamp8(40 + (215 * x) / width);
      data[o + 1] = clamp8(200 - (150 * y) / height);
      data[o + 2] = 180;
      data[o + 3] = clamp8(255 * edge * (d < rad * 0.5 ? 1 : 0.6));
    }
  }
  return { data, width, height, channels: 4 };
}
