// The production role split, as docker-compose.yml runs it (docs/operators.md, "Database roles"):
// an owner that only migrates, and the service as a login member of kiln_app made by
// db/compose/service-role.sql. Real processes: psql, `kiln migrate`, `kiln user create`,
// `kiln key create` and `kiln serve`, against a database of its own owned by a non-superuser.

import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { before, test } from 'node:test';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { api, onCleanup, startServer, createTestDb } from './_setup.ts';

const root = path.resolve(import.meta.dirname, '..');
const BIN = path.join(root, 'bin', 'kiln.js');
const sfx = `${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
const ownerRole = `own_${sfx}`;
const serviceRole = `svc_${sfx}`;
const dbName = `kiln_roles_${sfx}`;
const password = `pw-${Math.random().toString(36).slice(2)}`;
let ownerUrl = '';
let serviceUrl = '';

function urlFor(user: string): string {
  const u = new URL(process.env.KILN_TEST_ADMIN_URL!);
  u.username = user;
  u.password = password;
  u.pathname = `/${dbName}`;
  return u.toString();
}

async function kiln(args: string[], env: Record<string, string>) {
  const clean = { ...process.env };
  delete clean.KILN_DATABASE_OWNER_URL;
  try {
    const r = await promisify(execFile)(process.execPath, [BIN, ...args], { env: { ...clean, KILN_LOG: 'silent', ...env }, timeout: 90_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e: any) {
    return { code: e.code as number, stdout: String(e.stdout), stderr: String(e.stderr) };
  }
}

async function freePort(): Promise<number> {
  return await new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

before(async () => {
  const admin = postgres(process.env.KILN_TEST_ADMIN_URL!, { max: 1, onnotice: () => {} });
  onCleanup(async () => {
    await admin.unsafe(`drop database if exists ${dbName} with (force)`).catch(() => {});
    for (const r of [serviceRole, ownerRole]) await admin.unsafe(`drop role if exists ${r}`).catch(() => {});
    await admin.end();
  });
  // What an operator (or the Postgres image, from POSTGRES_USER) does once: an owner and its database.
  await admin.unsafe(`create role ${ownerRole} login password '${password}'`);
  await admin.unsafe(`create database ${dbName} owner ${ownerRole}`);
  ownerUrl = urlFor(ownerRole);
  serviceUrl = urlFor(serviceRole);
  // docker-compose.yml's init hook, with Debian's psql: the service's login, a member of kiln_app.
  const u = new URL(process.env.KILN_TEST_ADMIN_URL!);
  u.pathname = `/${dbName}`;
  const sqlFile = path.join(root, 'db', 'compose', 'service-role.sql');
  await promisify(execFile)('psql', [u.toString(), '-q', '-v', `service_role=${serviceRole}`, '-v', `service_password=${password}`, '-f', sqlFile]);
  // Twice: idempotent, as a restarted container's hook would be if it ran again.
  await promisify(execFile)('psql', [u.toString(), '-q', '-v', `service_role=${serviceRole}`, '-v', `service_password=${password}`, '-f', sqlFile]);
});

test('the service role cannot migrate and says who must; the owner migrates through KILN_DATABASE_OWNER_URL', { timeout: 180_000 }, async () => {
  const refused = await kiln(['serve'], { DATABASE_URL: serviceUrl, PORT: String(await freePort()) });
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /cannot migrate it[\s\S]*kiln migrate[\s\S]*KILN_DATABASE_OWNER_URL/);

  const migrated = await kiln(['migrate'], { DATABASE_URL: serviceUrl, KILN_DATABASE_OWNER_URL: ownerUrl, KILN_AUDIT_RETENTION: '400d' });
  assert.equal(migrated.code, 0, migrated.stderr);
  assert.equal(JSON.parse(migrated.stdout).migrated, true);
  const owner = postgres(ownerUrl, { max: 1, onnotice: () => {} });
  onCleanup(() => owner.end({ timeout: 1 }));
  const [s] = await owner`select pg_get_userbyid(nspowner) as owner from pg_namespace where nspname = 'kiln'`;
  assert.equal(s!.owner, ownerRole, 'the owner owns what the migrations made');
  const [p] = await owner`select extract(epoch from retention)::int as s from kiln_private.audit_policy`;
  assert.equal(p!.s, 400 * 86_400, 'kiln migrate recorded KILN_AUDIT_RETENTION');

  // The operator commands and the service run as the service role.
  const user = await kiln(['user', 'create', '--email', `roles-${sfx}@example.test`, '--tier', 'pro'], { DATABASE_URL: serviceUrl });
  assert.equal(user.code, 0, user.stderr);
  const key = await kiln(['key', 'create', '--user', JSON.parse(user.stdout).id, '--scopes', 'read,write'], { DATABASE_URL: serviceUrl });
  assert.equal(key.code, 0, key.stderr);
  const secret = JSON.parse(key.stdout).key as string;

  const port = await freePort();
  const env = { ...process.env, DATABASE_URL: serviceUrl, PORT: String(port), KILN_LOG: 'warn' } as NodeJS.ProcessEnv;
  delete env.KILN_DATABASE_OWNER_URL;
  const child = spawn(process.execPath, [BIN, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  onCleanup(async () => { if (child.exitCode === null) child.kill('SIGKILL'); });
  const origin = `http://127.0.0.1:${port}`;
  let ready: any = null;
  for (const until = Date.now() + 60_000; Date.now() < until && child.exitCode === null;) {
    const r = await fetch(`${origin}/readyz`).catch(() => null);
    if (r?.status === 200) { ready = await r.json(); break; }
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.ok(ready, `kiln serve did not become ready: ${out}`);
  assert.equal(ready.warnings, undefined, 'no warning for a kiln_app member');
  assert.doesNotMatch(out, /superuser|owner of its schemas/);

  const gen = await api(`${origin}/api/v1`, secret, '/generations', {
    body: { type: 'code', prompt: 'as the service role', targetLanguage: 'tsx' }, headers: { prefer: 'wait=30' },
  });
  assert.equal(gen.status, 200, JSON.stringify(gen.body));
  assert.equal(gen.body.status, 'completed');
  const audit = await api(`${origin}/api/v1`, secret, '/usage');
  assert.equal(audit.status, 200);
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  assert.equal(child.exitCode, 0, out);
});

test('a service that connects as a superuser or the owner says so in /readyz', async () => {
  const db = await createTestDb();
  const asOwner = await startServer({ db: { ...db, app: db.sql } });
  const r = await fetch(`${asOwner.origin}/readyz`);
  const body = await r.json();
  assert.equal(r.status, 200);
  assert.equal(body.warnings.length, 1);
  assert.match(body.warnings[0], /superuser .*kiln_app/);
  const asApp = await startServer({ db });
  const ok = await (await fetch(`${asApp.origin}/readyz`)).json();
  assert.equal(ok.warnings, undefined);
});
