// The embedded cluster's password and how operators reach the database: a generated password per
// data dir (mode 0600), a cluster of the old fixed password moved off it at its next start,
// `kiln db url` (embedded and DATABASE_URL), and operator commands that refuse rather than make a
// new empty database when run away from the project's data dir.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import postgres from 'postgres';
import { hasCluster, LEGACY_PASSWORD, passwordFile, startEmbedded, type EmbeddedHandle } from '../src/db/embedded.ts';
import { BIN, tempDir } from './_cli.ts';
import { onCleanup } from './_setup.ts';

/** `kiln ARGS` as a child process (its output is not JSON: _cli.ts's helpers would refuse it). */
function startKiln(args: string[], env: Record<string, string>, opts: { cwd?: string } = {}) {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: opts.cwd,
    env: { ...process.env, KILN_LOG: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b) => { stdout += b; });
  child.stderr.on('data', (b) => { stderr += b; });
  const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  onCleanup(async () => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
  return { child, stdout: () => stdout, done };
}
const cli = (args: string[], env: Record<string, string>, opts: { cwd?: string } = {}) => startKiln(args, env, opts).done;

/** A data dir for a cluster (removed after the file, its postgres stopped first if still up). */
function dataDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-embedded-'));
  onCleanup(async () => {
    const pid = postmasterPid(dir);
    if (pid) {
      process.kill(pid, 'SIGINT');
      for (let i = 0; i < 100 && postmasterPid(dir); i++) await new Promise((r) => setTimeout(r, 100));
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

/** The pid of the postgres running the data dir's cluster, or null. */
function postmasterPid(dir: string): number | null {
  try {
    const pid = Number(fs.readFileSync(path.join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(pid, 0);
    return pid;
  } catch {
    return null;
  }
}

const running: EmbeddedHandle[] = [];
onCleanup(async () => { for (const h of running) await h.stop(); });
async function start(dir: string): Promise<EmbeddedHandle> {
  const h = await startEmbedded(dir, { fast: true });
  running.push(h);
  return h;
}

/** What `fn` returns on a connection to `url` (rows as a plain array). */
async function query(url: string, fn: (sql: postgres.Sql) => Promise<unknown>): Promise<unknown> {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    const r = await fn(sql);
    return Array.isArray(r) ? [...r] : r;
  } finally {
    await sql.end();
  }
}

/** The SQLSTATE a connection to `url` fails with (null when it connects). */
async function refusal(url: string): Promise<string | null> {
  try {
    await query(url, (sql) => sql`select 1`);
    return null;
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
}

const withPassword = (url: string, password: string) => {
  const u = new URL(url);
  u.password = password;
  return u.toString();
};

const stored = (dir: string) => fs.readFileSync(passwordFile(dir), 'utf8').trim();
const mode = (file: string) => fs.statSync(file).mode & 0o777;

// Two data dirs, reused by the tests below: `first` holds a stopped cluster afterwards.
const first = dataDir();
const second = dataDir();

test('each new cluster gets its own generated password, kept in a 0600 file outside the cluster dir; the old fixed one is refused', { timeout: 120_000 }, async () => {
  const a = await start(first);
  const pa = stored(first);
  assert.match(pa, /^[A-Za-z0-9_-]{32}$/, 'URL-safe, 192 bits');
  assert.equal(mode(passwordFile(first)), 0o600);
  assert.ok(!passwordFile(first).startsWith(path.join(first, 'pg') + path.sep), 'not inside the cluster directory');
  assert.equal(new URL(a.url).password, pa);
  assert.deepEqual(await query(a.url, (sql) => sql`select current_database() as db`), [{ db: 'kiln' }]);
  assert.equal(await refusal(withPassword(a.url, LEGACY_PASSWORD)), '28P01', 'the old fixed password no longer signs in');
  await a.stop();

  const b = await start(second);
  const pb = stored(second);
  assert.notEqual(pb, pa, 'another data dir, another password');
  assert.equal(mode(passwordFile(second)), 0o600);
  await query(b.url, (sql) => sql`select 1`);
  await b.stop();
});

test('a cluster made by an older Kiln (fixed password, no file) moves to a generated password at its next start and keeps its data', { timeout: 120_000 }, async () => {
  // Make `second` what an older Kiln left: the fixed password and no file, with data in it.
  const b = await start(second);
  const before = stored(second);
  await query(b.url, async (sql) => {
    await sql`create table legacy_marker (x int)`;
    await sql`insert into legacy_marker values (42)`;
  });
  await query(b.adminUrl('postgres'), (sql) => sql.unsafe(`alter role postgres password '${LEGACY_PASSWORD}'`));
  await b.stop();
  fs.rmSync(passwordFile(second));

  const moved = await start(second);
  const now = stored(second);
  assert.equal(mode(passwordFile(second)), 0o600);
  assert.notEqual(now, LEGACY_PASSWORD);
  assert.notEqual(now, before, 'a new password, generated now');
  assert.equal(new URL(moved.url).password, now);
  assert.deepEqual(await query(moved.url, (sql) => sql`select x from legacy_marker`), [{ x: 42 }]);
  assert.equal(await refusal(withPassword(moved.url, LEGACY_PASSWORD)), '28P01', 'the fixed password is gone');

  // A second process on the same data dir joins the running cluster with the file's password.
  const joined = await startEmbedded(second);
  assert.equal(joined.owned, false);
  assert.equal(joined.url, moved.url);
  await query(joined.url, (sql) => sql`select 1`);
  await moved.stop();
});

test('kiln db url: the embedded cluster\'s URL, which connects (started and held until Ctrl-C, or joined); DATABASE_URL as given', { timeout: 120_000 }, async () => {
  assert.ok(hasCluster(first) && !postmasterPid(first), 'a stopped cluster from the first test');
  const env = { DATABASE_URL: '', KILN_DATA_DIR: first };
  const holder = startKiln(['db', 'url'], env);
  const url = await new Promise<string>((resolve, reject) => {
    const t = setInterval(() => {
      const out = holder.stdout();
      if (out.includes('\n')) { clearInterval(t); resolve(out.split('\n')[0]!); }
      if (holder.child.exitCode !== null) { clearInterval(t); reject(new Error(`kiln db url exited ${holder.child.exitCode}`)); }
    }, 100);
  });
  assert.match(url, /^postgres:\/\/postgres:[A-Za-z0-9_-]{32}@127\.0\.0\.1:\d+\/kiln$/);
  assert.equal(new URL(url).password, stored(first));
  assert.deepEqual(await query(url, (sql) => sql`select current_database() as db`), [{ db: 'kiln' }]);

  // While it runs, another `kiln db url` joins and answers at once with the same URL.
  const again = await cli(['db', 'url'], env);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, `${url}\n`);

  holder.child.kill('SIGINT');
  const done = await holder.done;
  assert.equal(done.code, 0, done.stderr);
  assert.match(done.stderr, /Ctrl-C/);
  assert.equal(postmasterPid(first), null, 'the cluster it started is stopped');

  const given = 'postgres://kiln:secret@db.example.internal:5432/kiln?sslmode=require';
  const plain = await cli(['db', 'url'], { DATABASE_URL: given });
  assert.equal(plain.code, 0, plain.stderr);
  assert.equal(plain.stdout, `${given}\n`);

  const help = await cli(['db', 'url', '--help'], { DATABASE_URL: '' });
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^usage: kiln db url\b/);
});

test('operator commands away from the project refuse, naming where they looked, and create nothing', async () => {
  const cwd = fs.realpathSync(tempDir());
  for (const args of [['audit'], ['db', 'url'], ['user', 'create', '--email', 'x@example.com']]) {
    const r = await cli(args, { DATABASE_URL: '', KILN_DATA_DIR: '' }, { cwd });
    assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '');
    assert.ok(r.stderr.includes(`no Kiln database found at ${path.join(cwd, '.kiln')} (no DATABASE_URL set)`), r.stderr);
    assert.match(r.stderr, /KILN_DATA_DIR/);
    assert.match(r.stderr, /kiln serve/);
  }
  assert.deepEqual(fs.readdirSync(cwd), [], 'no .kiln made');

  // KILN_DATA_DIR naming a directory without a cluster: refused the same way, naming it.
  const elsewhere = path.join(cwd, 'typo');
  const r = await cli(['audit'], { DATABASE_URL: '', KILN_DATA_DIR: elsewhere }, { cwd });
  assert.equal(r.code, 1);
  assert.ok(r.stderr.includes(`no Kiln database found at ${elsewhere} `), r.stderr);
  assert.equal(fs.existsSync(elsewhere), false);
});
