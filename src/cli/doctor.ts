// CLI command `kiln doctor [--fix]` (added to the command table in src/cli/commands.ts): checks a
// restored or upgraded database and prints what it found as JSON (docs/operators.md, "Backups and
// restore"). The checks are SQL (kiln.doctor_check); with the s3 store the newest objects' bytes
// are looked for in the bucket (a HEAD each; --full: every object). --fix first repairs what is
// safe (kiln.doctor_fix, each repair an audit entry), then checks again. Exit code 1 when anything
// is left to fix or to look at.

import { parseArgs, UsageError } from './args.ts';
import { withDb, type Command } from './command.ts';
import type { Config } from '../config.ts';
import type { Sql } from '../db/pool.ts';
import { doctorCheck, doctorFix, doctorStoredObjects, type DoctorFinding, type DoctorFixed } from '../db/sql/doctor.ts';

/** Objects whose bytes are looked for in the bucket without --full: the newest. */
const DEFAULT_OBJECTS = 200;
/** Items listed per check (the count is always the whole). */
const DEFAULT_LIMIT = 100;
/** HEADs in flight at once. */
const HEAD_CONCURRENCY = 8;
const PAGE = 500;

function whole(v: string | undefined, name: string, min: number, max: number, dflt: number): number {
  if (v === undefined) return dflt;
  if (!/^\d{1,9}$/.test(v) || Number(v) < min || Number(v) > max) throw new UsageError(`--${name} must be a whole number from ${min} to ${max}`);
  return Number(v);
}

interface BucketCheck extends DoctorFinding {
  /** Objects looked for in the bucket. */
  checked: number;
  /** Every s3 object (--full), or only the newest. */
  full: boolean;
}

/** HEADs the s3 store's objects: the newest `objects`, or every one (`full`); null without a bucket. */
async function checkBucket(sql: Sql, config: Config, opts: { full: boolean; objects: number; limit: number }): Promise<BucketCheck | null> {
  if (!config.store.s3) return null;
  const { bucketFor } = await import('../storage/s3.ts');
  const bucket = bucketFor(config.store.s3);
  const found: BucketCheck = { count: 0, fixable: 0, items: [], checked: 0, full: opts.full };
  const head = async (rows: Array<{ path: string; location: string; created_at: Date }>) => {
    for (let i = 0; i < rows.length; i += HEAD_CONCURRENCY) {
      const batch = rows.slice(i, i + HEAD_CONCURRENCY);
      const there = await Promise.all(batch.map((r) => bucket.exists(r.location)));
      batch.forEach((r, j) => {
        found.checked++;
        if (there[j]) return;
        found.count++;
        if (found.items.length < opts.limit) found.items.push({ path: r.path, location: r.location, created_at: r.created_at, fixable: false });
      });
    }
  };
  if (!opts.full) {
    await head(await doctorStoredObjects(sql, true, null, opts.objects));
    return found;
  }
  for (let after: string | null = null; ;) {
    const rows = await doctorStoredObjects(sql, false, after, PAGE);
    await head(rows);
    if (rows.length < PAGE) return found;
    after = rows[rows.length - 1]!.path;
  }
}

export const doctorCommands: Record<string, Command> = {
  doctor: {
    help: '[--fix] [--limit N] [--objects N | --full] — checks a restored or upgraded database: dead worker leases and the jobs they hold, ledger rows without their generation, reservations never settled, charges settled twice, images missing from the store (with s3: HEAD of the newest --objects, default 200, or of every one with --full). --fix repairs what is safe (each repair audited). JSON; exit code 1 when anything is left.',
    async run(argv, config) {
      const { values } = parseArgs(argv, {
        options: { fix: { type: 'boolean' }, limit: { type: 'string' }, objects: { type: 'string' }, full: { type: 'boolean' } },
      });
      const limit = whole(values.limit, 'limit', 1, 10_000, DEFAULT_LIMIT);
      const objects = whole(values.objects, 'objects', 0, 1_000_000, DEFAULT_OBJECTS);
      if (values.full && values.objects !== undefined) throw new UsageError('give --objects or --full, not both');
      const stale = config.workerStaleSeconds;
      // A generation's run window: each attempt's deadline, plus the window a run's nodes have to start.
      const execution = Math.ceil(config.generationTimeoutMs / 1000);
      const grace = config.runWindowSeconds + stale;
      return withDb(config, async (sql) => {
        let fixed: DoctorFixed | null = null;
        if (values.fix) fixed = (await doctorFix(sql, stale))[0]!.r;
        const checks = (await doctorCheck(sql, stale, execution, grace, limit))[0]!.r;
        const bytes = await checkBucket(sql, config, { full: values.full === true, objects, limit });
        const all: Record<string, DoctorFinding> = { ...checks, ...(bytes ? { missing_bytes: bytes } : {}) };
        const toFix = Object.values(all).reduce((n, f) => n + f.fixable, 0);
        const toReview = Object.values(all).reduce((n, f) => n + f.count - f.fixable, 0);
        const ok = toFix === 0 && toReview === 0;
        if (!ok) process.exitCode = 1;
        return {
          ok,
          store: config.store.backend,
          to_fix: toFix,
          to_review: toReview,
          ...(fixed ? { fixed } : {}),
          checks: all,
        };
      });
    },
  },
};
