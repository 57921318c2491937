// docker-compose.observability.yml (issue 30): no Docker engine here, so the file and the configs
// it mounts are parsed and checked against Kiln's configuration, the alert rules and promtool.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { tracingWanted } from '../src/telemetry/tracing.ts';
import { withEnv } from './_setup.ts';

const root = path.resolve(import.meta.dirname, '..');
const read = (f: string) => parse(fs.readFileSync(path.join(root, f), 'utf8'), { merge: true });
/** `${NAME:-default}` → default, as compose does with NAME unset. */
const interpolate = (env: Record<string, string>) =>
  Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v).replace(/\$\{[A-Z0-9_]+:-([^}]*)\}/g, '$1')]));
const base = read('docker-compose.yml');
const obs = read('docker-compose.observability.yml');

test('an override of api and worker, with Prometheus, Grafana, a collector and Jaeger beside them', async () => {
  assert.deepEqual(Object.keys(obs.services).sort(), ['api', 'grafana', 'jaeger', 'otel-collector', 'prometheus', 'worker']);
  const { loadConfig } = await import('../src/config.ts');
  for (const name of ['api', 'worker']) {
    assert.ok(base.services[name], `${name} is a service of docker-compose.yml`);
    const env: Record<string, string> = interpolate({ ...(base.services[name].environment ?? {}), ...obs.services[name].environment });
    const config = withEnv({ ...env, KILN_URL_SIGNING_SECRET: 'x'.repeat(64), DATABASE_URL: 'postgres://kiln@postgres/kiln' }, loadConfig);
    assert.equal(config.metrics.port, 9464);
    assert.equal(config.metrics.host, '0.0.0.0');
    assert.equal(tracingWanted(env), true);
    assert.equal(env.OTEL_EXPORTER_OTLP_ENDPOINT, 'http://otel-collector:4318');
    assert.match(env.OTEL_SERVICE_NAME!, /^kiln-/);
  }
  // Every file mounted from the repository exists.
  for (const svc of Object.values<any>(obs.services)) {
    for (const v of svc.volumes ?? []) {
      const src = String(v).split(':')[0]!;
      if (src.startsWith('./')) assert.ok(fs.existsSync(path.join(root, src)), `${src} exists`);
    }
  }
});

test('Prometheus scrapes every replica on the metrics port with the alert rules; the collector sends to Jaeger', () => {
  const prom = read('docs/observability/prometheus.yml');
  const sd = prom.scrape_configs[0].dns_sd_configs[0];
  assert.deepEqual(sd.names, ['api', 'worker']);
  assert.equal(sd.port, 9464);
  const mount = obs.services.prometheus.volumes.find((v: string) => v.startsWith('./docs/prometheus/alerts.yml'));
  assert.equal(mount.split(':')[1], prom.rule_files[0]);
  const col = read('docs/observability/otel-collector.yaml');
  assert.equal(col.receivers.otlp.protocols.http.endpoint, '0.0.0.0:4318');
  assert.deepEqual(col.service.pipelines.traces.exporters, ['otlp/jaeger']);
  assert.equal(col.exporters['otlp/jaeger'].endpoint, 'jaeger:4317');
  assert.equal(obs.services.jaeger.environment.COLLECTOR_OTLP_ENABLED, 'true');
  const dash = read('docs/observability/grafana-dashboards.yaml');
  const dashMount = obs.services.grafana.volumes.find((v: string) => v.startsWith('./docs/grafana'));
  assert.equal(dashMount.split(':')[1], dash.providers[0].options.path);

  if (spawnSync('promtool', ['--version']).error) {
    process.stdout.write('# promtool not found: `promtool check config` skipped (apt-get install prometheus)\n');
    return;
  }
  // The config as the container sees it: its rule file at the mounted path.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-prom-'));
  try {
    fs.copyFileSync(path.join(root, 'docs/prometheus/alerts.yml'), path.join(dir, 'alerts.yml'));
    fs.writeFileSync(path.join(dir, 'prometheus.yml'), fs.readFileSync(path.join(root, 'docs/observability/prometheus.yml'), 'utf8').replace(prom.rule_files[0], path.join(dir, 'alerts.yml')));
    const out = spawnSync('promtool', ['check', 'config', path.join(dir, 'prometheus.yml')], { encoding: 'utf8' });
    assert.equal(out.status, 0, out.stdout + out.stderr);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
