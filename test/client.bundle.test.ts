// The client is browser code: esbuild bundles src/client/index.ts for the browser (where a Node
// builtin cannot resolve) with nothing but the client's files and openapi-fetch in it, and the
// bundle runs in a sandbox holding only the globals a browser has — no process, require or
// Buffer — against the real server, event stream included.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import vm from 'node:vm';
import { createAccount, createKey, onCleanup, startServer } from './_setup.ts';

const root = path.resolve(import.meta.dirname, '..');

test('esbuild --platform=browser bundles the client with no Node builtin, and the bundle works with browser globals only', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-bundle-'));
  onCleanup(async () => fs.rmSync(dir, { recursive: true, force: true }));
  const out = path.join(dir, 'client.js');
  const meta = path.join(dir, 'meta.json');
  await promisify(execFile)(path.join(root, 'node_modules', '.bin', 'esbuild'), [
    'src/client/index.ts', '--bundle', '--platform=browser', '--format=iife', '--global-name=Kiln',
    `--outfile=${out}`, `--metafile=${meta}`, '--log-level=error',
  ], { cwd: root, timeout: 30_000 });

  const { inputs } = JSON.parse(fs.readFileSync(meta, 'utf8')) as { inputs: Record<string, { imports: Array<{ path: string; external?: boolean }> }> };
  const files = Object.keys(inputs);
  assert.ok(files.includes('src/client/index.ts') && files.includes('src/client/events.ts'), files.join(', '));
  for (const f of files) assert.ok(f.startsWith('src/client/') || /node_modules\/openapi-fetch\//.test(f), `bundled ${f}`);
  for (const [f, { imports }] of Object.entries(inputs)) {
    for (const i of imports) assert.ok(!i.external && !i.path.startsWith('node:'), `${f} imports ${i.path}`);
  }
  const code = fs.readFileSync(out, 'utf8');
  assert.doesNotMatch(code, /\brequire\(|["']node:/);

  // A context with a browser's globals and nothing of Node's.
  const g = globalThis as any;
  const browser: Record<string, unknown> = {};
  for (const name of ['fetch', 'Request', 'Response', 'Headers', 'URL', 'URLSearchParams', 'AbortController', 'AbortSignal', 'TextDecoder',
    'TextEncoder', 'ReadableStream', 'FormData', 'Blob', 'crypto', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval',
    'queueMicrotask', 'DOMException', 'console']) browser[name] = g[name];
  const sandbox = vm.createContext(browser);
  vm.runInContext(code, sandbox, { filename: 'client.js' });
  assert.equal(vm.runInContext('typeof process + typeof require + typeof Buffer', sandbox), 'undefinedundefinedundefined');
  const Kiln = vm.runInContext('Kiln', sandbox);
  assert.equal(typeof Kiln.createKilnClient, 'function');

  const srv = await startServer();
  const a = await createAccount(srv.db.sql);
  const client = Kiln.createKilnClient({ baseUrl: srv.origin, apiKey: (await createKey(srv.db.sql, a.id)).key });
  const models = await client.models.list();
  assert.ok(models.data.some((m: any) => m.id === 'local/coder'));
  const accepted = await client.generations.create({ type: 'code', prompt: 'from a browser' });
  await client.generations.cancel(accepted.id);
  const events: any[] = [];
  for await (const e of client.generations.watch(accepted.id)) events.push(e);
  assert.deepEqual(events.map((e) => [e.id, e.event, e.data.status, e.data.error, e.terminal]), [['3', 'status', 'failed', 'canceled', true]]);
  const err = await client.generations.get('not-a-uuid').then(() => null, (e: unknown) => e);
  assert.ok(err instanceof Kiln.KilnError);
  assert.equal(err.name, 'KilnError');
  assert.equal(err.type, 'invalid_request');
});
