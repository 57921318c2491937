// Pixel sizes for the aspect ratios a generation may ask for.

import type { AspectRatio } from './types.ts';

export function aspectValue(ratio: AspectRatio): number {
  const [w, h] = ratio.split(':').map(Number) as [number, number];
  return w / h;
}

/** Width and height with the longest edge = `longEdge`, the other edge rounded to a pixel. */
export function aspectSize(ratio: AspectRatio, longEdge = 1024): { width: number; height: number } {
  const r = aspectValue(ratio);
  return r >= 1
    ? { width: longEdge, height: Math.round(longEdge / r) }
    : { width: Math.round(longEdge * r), height: longEdge };
}
