// node:test reporter for `KILN_TEST_TIMINGS=FILE npm test`: per file, the wall time from its first to its
// last event and the sum of its top-level tests, longest first, written to FILE.
import fs from 'node:fs';
export default async function* timings(source) {
  const files = new Map();
  for await (const ev of source) {
    const f = ev.data?.file;
    if (!f) continue;
    const now = Date.now();
    let r = files.get(f);
    if (!r) files.set(f, r = { first: now, last: now, sum: 0 });
    r.last = now;
    if ((ev.type === 'test:pass' || ev.type === 'test:fail') && ev.data.nesting === 0) r.sum += ev.data.details?.duration_ms ?? 0;
  }
  const rows = [...files].map(([f, r]) => ({ f: f.replace(/.*\/test\//, ''), wall: (r.last - r.first) / 1000, sum: r.sum / 1000 }));
  rows.sort((a, b) => b.wall - a.wall);
  fs.writeFileSync(process.env.KILN_TEST_TIMINGS, rows.map((r) => `${r.wall.toFixed(1)}\t${r.sum.toFixed(1)}\t${r.f}`).join('\n') + '\n');
}
