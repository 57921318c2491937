// Deterministic randomness for the local provider: the same request always yields the same output.

import { createHash } from 'node:crypto';
import type { ImageInputData, TextInput } from './types.ts';

export function requestSeed(parts: {
  kind: string;
  prompt: string;
  textInputs: readonly TextInput[];
  images: readonly ImageInputData[];
}): Buffer {
  const h = createHash('sha256');
  const field = (s: string | Buffer) => {
    const b = typeof s === 'string' ? Buffer.from(s, 'utf8') : s;
    const len = Buffer.alloc(8);
    len.writeBigUInt64BE(BigInt(b.length));
    h.update(len).update(b); // length-prefixed so ("ab","c") and ("a","bc") differ
  };
  field(parts.kind);
  field(parts.prompt);
  for (const t of parts.textInputs) {
    field(t.label ?? '');
    field(t.language ?? '');
    field(t.content);
  }
  for (const img of parts.images) {
    field(img.mediaType);
    field('data' in img ? img.data : img.url);
  }
  return h.digest();
}

/** mulberry32 over the first 4 seed bytes: small, fast, good enough for pictures. */
export function rng(seed: Buffer): () => number {
  let a = seed.readUInt32BE(0);
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
