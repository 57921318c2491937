// `npm run test:repeat -- N FILE…`: runs test files N times in a row, each time as `npm test`
// runs them (a fresh embedded Postgres, or DATABASE_URL's server), and prints one line per round
// with its outcome and the tests' diagnostics, then the tally. For claims about rare failures
// that one green run cannot show (issue 32: `npm run test:repeat -- 20 test/generations.restarts.test.ts`).
// Exits 1 when any round failed.

import { spawn } from 'node:child_process';
import path from 'node:path';

const [countArg, ...files] = process.argv.slice(2);
const rounds = Number(countArg);
if (!Number.isInteger(rounds) || rounds < 1 || files.length === 0) {
  process.stderr.write('usage: npm run test:repeat -- N FILE…\n');
  process.exit(2);
}
const runner = path.join(import.meta.dirname, '_run.ts');

function round(): Promise<{ ok: boolean; ms: number; notes: string[]; failures: string[] }> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', runner, ...files], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => {
      const lines = out.split('\n');
      resolve({
        ok: code === 0,
        ms: Date.now() - started,
        notes: lines.filter((l) => /^ℹ (?!tests|suites|pass|fail|cancelled|skipped|todo|duration)/.test(l)).map((l) => l.slice(2)),
        failures: lines.filter((l) => /^\s*(✖|AssertionError|Error:)/.test(l)).slice(0, 6),
      });
    });
  });
}

let failed = 0;
for (let i = 1; i <= rounds; i++) {
  const r = await round();
  if (!r.ok) failed++;
  process.stdout.write(`round ${i}/${rounds}: ${r.ok ? 'pass' : 'FAIL'} in ${(r.ms / 1000).toFixed(1)} s${r.notes.length ? ` — ${r.notes.join('; ')}` : ''}\n`);
  for (const f of r.ok ? [] : r.failures) process.stdout.write(`    ${f.trim().slice(0, 400)}\n`);
}
process.stdout.write(`${rounds - failed} of ${rounds} rounds passed\n`);
process.exit(failed ? 1 : 0);
