// `npm test`: starts a throwaway embedded Postgres (or uses DATABASE_URL's server), builds a
// migrated template database once, then runs every test file with node:test; each file clones
// the template, so files run in parallel in isolation.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { startEmbedded } from '../src/db/embedded.ts';
import { migrateAndSeed } from '../src/cli/boot.ts';

const root = path.resolve(import.meta.dirname, '..');
/** The login role the service runs as in tests: a member of kiln_app, nothing more. */
const SERVICE_ROLE = 'kiln_test_service';
const SERVICE_PASSWORD = 'kiln-test-service';

function findTests(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== 'bench' && e.name !== 'fixtures') out.push(...findTests(p));
    } else if (e.name.endsWith('.test.ts')) out.push(p);
  }
  return out.sort();
}

async function main(): Promise<number> {
  const only = process.argv.slice(2);
  const files = only.length ? only.map((f) => path.resolve(f)) : findTests(path.join(root, 'test'));
  let adminUrl: (db: string) => string;
  let stop = async () => {};
  let dataDir: string | null = null;
  if (process.env.DATABASE_URL) {
    const u = new URL(process.env.DATABASE_URL);
    adminUrl = (db) => { const x = new URL(u); x.pathname = `/${db}`; return x.toString(); };
  } else {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-test-'));
    const pg = await startEmbedded(dataDir, { fast: true });
    adminUrl = pg.adminUrl;
    stop = pg.stop;
  }
  const cleanup = async () => {
    await stop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  };
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => { cleanup().finally(() => process.exit(130)); });

  const template = `kiln_template_${process.pid}`;
  const admin = postgres(adminUrl('postgres'), { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`drop database if exists ${template}`);
    await admin.unsafe(`create database ${template}`);
    const t0 = Date.now();
    await migrateAndSeed(adminUrl(template), { includeCurrent: true });
    // The service under test connects as a login member of kiln_app, as in production
    // (docs/operators.md, "Database roles"); test code's own fixtures use the owner (test/_setup.ts).
    await admin.unsafe(`do $$ begin
      if not exists (select 1 from pg_roles where rolname = '${SERVICE_ROLE}') then
        create role ${SERVICE_ROLE} login password '${SERVICE_PASSWORD}' in role kiln_app;
      end if;
    exception when duplicate_object or unique_violation then null;
    end $$`);
    process.stdout.write(`# Node ${process.version} (${process.execPath}); template database migrated in ${Date.now() - t0} ms\n`);

    const code = await new Promise<number>((resolve) => {
      // The spec reporter named: Node 20 falls back to TAP when stdout is not a terminal (CI),
      // Node 24 does not, and the two CI runs should read alike.
      const child = spawn(
        process.execPath,
        [
          '--import', 'tsx', '--test', '--test-reporter=spec', '--test-reporter-destination=stdout',
          // KILN_TEST_TIMINGS=FILE: each file's time, longest first (test/_timings.mjs).
          ...(process.env.KILN_TEST_TIMINGS ? ['--test-reporter=./test/_timings.mjs', '--test-reporter-destination=stdout'] : []),
          `--test-concurrency=${process.env.KILN_TEST_CONCURRENCY ?? 2}`, ...files,
        ],
        {
          stdio: 'inherit',
          env: {
            ...process.env, KILN_TEST_ADMIN_URL: adminUrl('postgres'), KILN_TEST_TEMPLATE: template, KILN_LOG: process.env.KILN_LOG ?? 'silent',
            KILN_TEST_SERVICE_ROLE: `${SERVICE_ROLE}:${SERVICE_PASSWORD}`,
          },
        },
      );
      child.on('exit', (c, sig) => resolve(c ?? (sig ? 1 : 0)));
    });
    return code;
  } finally {
    await admin.unsafe(`drop database if exists ${template} with (force)`).catch(() => {});
    await admin.end();
    await cleanup();
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`test runner failed: ${e?.stack ?? e}\n`);
    process.exit(1);
  },
);
