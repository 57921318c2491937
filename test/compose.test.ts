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
