// Issue 31: nothing on the pooled connection may rely on session state, because PgBouncer in
// transaction mode runs each transaction on whichever server connection is free. The audit as
// checks that fail when a change brings session state back: the pooled client sends no named
// prepared statements; LISTEN is only ever sent on the direct pool; no SQL function holds a
// session-level advisory lock (except a worker's lease, on its own direct connection), sets a
// setting for the session, makes a temporary table, keeps a cursor open past its transaction or
// LISTENs; and no query in src/ sends a session-wide SET.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { before, test } from 'node:test';
import { openDatabase } from '../src/cli/boot.ts';
import { createContext } from '../src/context.ts';
import { hubOf } from '../src/live/hub.ts';
import { createTestDb, testConfig, type TestDb } from './_setup.ts';

const root = path.resolve(import.meta.dirname, '..');
let db: TestDb;

before(async () => {
  db = await createTestDb();
});

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'console' ? [] : sources(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

test('with KILN_DATABASE_POOLER_URL, queries go to the pooler without prepared statements; LISTEN stays on the direct pool', async () => {
  // Any server will do as the "pooler" here: what is checked is which client goes where, and how.
  const pooler = db.url.replace('127.0.0.1', 'localhost');
  const config = testConfig({ databaseUrl: db.url, poolerUrl: pooler });
  const opened = await openDatabase(config, { migrate: false, handleSignals: false });
  try {
    assert.notEqual(opened.sql, opened.direct);
    assert.equal(opened.sql.options.prepare, false, 'pooled: no named prepared statements');
    assert.equal(opened.direct.options.prepare, true);
    assert.deepEqual(opened.sql.options.host, ['localhost']);
    assert.deepEqual(opened.direct.options.host, ['127.0.0.1']);
    const ctx = createContext(config, opened.sql, undefined, { direct: opened.direct });
    const hub = hubOf(ctx);
    assert.equal((hub as any).sql, opened.direct, 'the status hub listens on the direct pool');
    await hub.ready();
    const [row] = await opened.sql`select count(*)::int as n from pg_stat_activity
      where datname = current_database() and query ilike 'listen%' and client_hostname is null and client_addr = '127.0.0.1'`;
    assert.ok(row!.n >= 1);
    hub.close();
  } finally {
    await opened.close();
  }
  // Without a pooler the two are one pool, prepared statements on.
  const plain = await openDatabase(testConfig({ databaseUrl: db.url, poolerUrl: undefined }), { migrate: false, handleSignals: false });
  try {
    assert.equal(plain.sql, plain.direct);
    assert.equal(plain.sql.options.prepare, true);
  } finally {
    await plain.close();
  }
});

test('LISTEN is sent only on the direct pool (src/)', () => {
  const calls: string[] = [];
  for (const file of sources(path.join(root, 'src'))) {
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(/([\w.!]+)\.listen\(/g)) {
      if (/server|srv/i.test(m[1]!) || m[1] === 'this') continue; // an HTTP server's listen; the hub's own method
      calls.push(`${path.relative(root, file)}: ${m[1]}.listen`);
    }
  }
  // …and as a statement: the worker's cancel LISTEN, on its lease connection (direct, one session).
  for (const file of sources(path.join(root, 'src'))) {
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(/([\w.!]+)\.unsafe\(\s*[`'"]\s*listen\b/gi)) calls.push(`${path.relative(root, file)}: ${m[1]}.unsafe(listen)`);
  }
  assert.deepEqual(calls.sort(), ['src/live/hub.ts: this.sql.listen', 'src/worker/worker.ts: conn.unsafe(listen)']);
  assert.match(fs.readFileSync(path.join(root, 'src/worker/worker.ts'), 'utf8'), /return postgres\(w\.url, \{\s*max: 1,/, 'the lease connection: the direct URL, one session');
  // The hub's pool is the direct one (hubOf).
  assert.match(fs.readFileSync(path.join(root, 'src/live/hub.ts'), 'utf8'), /const sql = ctx\.direct \?\? ctx\.sql;/);
});

test('no SQL function relies on session state (the migrated catalog, current.sql included)', async () => {
  const fns = await db.sql<Array<{ name: string; src: string; config: string[] | null }>>`
    select n.nspname || '.' || p.proname as name, p.prosrc as src, p.proconfig as config
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname in ('kiln', 'kiln_private')`;
  assert.ok(fns.length > 100);
  const found = (re: RegExp) => fns.filter((f) => re.test(f.src)).map((f) => f.name).sort();
  // Session-level advisory locks: only the worker's lease, taken and let go on its own connection.
  assert.deepEqual(found(/pg_(try_)?advisory_(un)?lock(_shared)?\s*\(/i), ['kiln.register_worker', 'kiln.retire_worker']);
  assert.deepEqual(found(/set_config\s*\([^;]*,\s*false\s*\)/i), [], 'set_config(…, false) lasts for the session');
  assert.deepEqual(found(/create\s+(global\s+|local\s+)?(temp|temporary)\s+table/i), [], 'temporary tables live as long as the session');
  assert.deepEqual(found(/with\s+hold/i), [], 'a cursor WITH HOLD outlives its transaction');
  assert.deepEqual(found(/(^|;|\bbegin|\bthen|\belse|\bloop)\s*(un)?listen\s/im), []);
  // A SET statement in a body (a statement boundary, then SET): only SET LOCAL would be allowed.
  assert.deepEqual(found(/(;|\bbegin|\bthen|\belse|\bloop)\s*set\s+(?!local\b)(session\s+)?[a-z_.]+\s*(=|to)\s/i), []);
  // Function-level SET clauses are restored when the function returns: allowed, and these only.
  const settings = new Set(fns.flatMap((f) => f.config ?? []).map((c) => c.split('=')[0]));
  assert.deepEqual([...settings].sort(), ['lock_timeout', 'plan_cache_mode', 'search_path']);
});

test('no query in src/ sends a session-wide SET', () => {
  const hits: string[] = [];
  for (const file of sources(path.join(root, 'src'))) {
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(/[`'"]\s*[sS][eE][tT]\s+(?![lL][oO][cC][aA][lL]\b)(session\s+)?[a-z_]+\s*(=|to|TO)\s/g)) hits.push(`${path.relative(root, file)}: ${m[0]}`);
    // set_config only transaction-local (is_local true: it ends with the transaction, e.g. the audit
    // log's actor); never a session lock.
    for (const line of text.split('\n')) {
      if (/set_config\s*\(/i.test(line) && !/,\s*true\s*\)/.test(line)) hits.push(`${path.relative(root, file)}: ${line.trim()}`);
    }
    if (/pg_advisory_lock\s*\(/i.test(text)) hits.push(`${path.relative(root, file)}: pg_advisory_lock`);
  }
  assert.deepEqual(hits, []);
});
