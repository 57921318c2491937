// node:test reporter for `KILN_TEST_TIMINGS=FILE npm test`: per file, the summed time of its
// top-level tests (not its before/after hooks), longest first, written to FILE. Node 20 passes a
// file's events on only when the files before it have ended, so their arrival says nothing of
// when they ran: the durations are the tests' own.
import fs from 'node:fs';

export default async function* timings(source) {
  const files = new Map();
  for await (const ev of source) {
    if ((ev.type !== 'test:pass' && ev.type !== 'test:fail') || ev.data.nesting !== 0 || !ev.data.file) continue;
    const r = files.get(ev.data.file) ?? { ms: 0, tests: 0 };
    r.ms += ev.data.details?.duration_ms ?? 0;
    r.tests++;
    files.set(ev.data.file, r);
  }
  const rows = [...files].sort((a, b) => b[1].ms - a[1].ms);
  fs.writeFileSync(process.env.KILN_TEST_TIMINGS, rows.map(([f, r]) => `${(r.ms / 1000).toFixed(1)} s\t${r.tests}\t${f.replace(/.*\/test\//, 'test/')}`).join('\n') + '\n');
}
