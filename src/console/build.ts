// Builds the console (src/console/app) with esbuild, in memory, once per process: the first
// request to /console waits ~100–300 ms for it, nothing is written to disk, and whatever started
// the process (`npm start`, `kiln serve`, `kiln api`, the tests) serves assets built from its own
// sources — no separate build step, nothing stale.

import path from 'node:path';
import { gzipSync } from 'node:zlib';

export interface Asset {
  /** Served at /console/assets/<name> (content-hashed, so cached forever). */
  name: string;
  type: string;
  body: Uint8Array;
  /** Gzipped size in bytes (the first-load budget is counted in these). */
  gzipBytes: number;
}

export interface ConsoleBuild {
  script: Asset;
  style: Asset;
  /** Every asset by name: also the chunks the script imports when it needs them (the graph layout). */
  assets: Map<string, Asset>;
}

const APP = path.join(import.meta.dirname, 'app');

let pending: Promise<ConsoleBuild> | null = null;

/** The console's assets, built on first use (a failed build is retried by the next call). */
export function consoleBuild(): Promise<ConsoleBuild> {
  pending ??= build().catch((e) => {
    pending = null;
    throw e;
  });
  return pending;
}

async function build(): Promise<ConsoleBuild> {
  // Loaded only when the console is asked for: API-only processes never pay for esbuild.
  const esbuild = await import('esbuild');
  const out = await esbuild.build({
    entryPoints: { app: path.join(APP, 'main.tsx'), style: path.join(APP, 'style.css') },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2022', 'chrome111', 'firefox113', 'safari16.4'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    // The editor's canvas is React Flow (@xyflow/react), which imports React: Preact's compat
    // layer stands in for it, so the console ships one small runtime instead of two.
    alias: {
      react: 'preact/compat',
      'react-dom': 'preact/compat',
      'react/jsx-runtime': 'preact/jsx-runtime',
      'react-dom/client': 'preact/compat/client',
    },
    outdir: '/console-out',
    // Code loaded on demand (elkjs, for a run's graph) is a chunk of its own, out of the first
    // load. Names carry esbuild's content hash, which the importing chunk refers to.
    splitting: true,
    entryNames: '[name]-[hash]',
    chunkNames: 'chunk-[hash]',
    write: false,
    legalComments: 'none',
    logLevel: 'silent',
    // The API key lives in the page's memory and sessionStorage only; no source maps that would
    // have to be served or fetched.
    sourcemap: false,
  });
  const assets = new Map<string, Asset>();
  let script: Asset | undefined;
  let style: Asset | undefined;
  for (const f of out.outputFiles) {
    const ext = path.extname(f.path);
    const name = path.basename(f.path);
    const asset: Asset = {
      name,
      type: ext === '.js' ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8',
      body: f.contents,
      gzipBytes: gzipSync(f.contents).byteLength,
    };
    assets.set(asset.name, asset);
    if (name.startsWith('app-') && ext === '.js') script = asset;
    if (name.startsWith('style-') && ext === '.css') style = asset;
  }
  if (!script || !style) throw new Error('console build produced no app.js or style.css');
  return { script, style, assets };
}
