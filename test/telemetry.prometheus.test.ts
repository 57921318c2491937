// Issue 30, the operator's side of metrics: Debian's real `prometheus` server, started on loopback
// with docs/observability/prometheus.yml (its DNS discovery swapped for this test's `kiln serve`,
// with the Bearer token docs say to add) and docs/prometheus/alerts.yml, scrapes Kiln, evaluates
// every alert rule without error (KilnNoWorker stays inactive while a worker is alive), and runs
// every query of the Grafana dashboard (docs/grafana/kiln.json). Skips, saying so, where the
// `prometheus` binary is absent (.ci/run installs Debian's prometheus package).

import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import YAML from 'yaml';
import { spawnKiln, type Spawned } from './_live.ts';
import { api, createAccount, createKey, createTestDb, type TestDb } from './_setup.ts';

const root = path.resolve(import.meta.dirname, '..');
const TOKEN = 'prometheus-test-token';
const hasPrometheus = !spawnSync('prometheus', ['--version']).error;

let db: TestDb;
let kiln: Spawned;
let prom: ChildProcess | undefined;
let promUrl: string;
let dir: string;

async function freePort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function promApi(p: string): Promise<any> {
  const res = await fetch(`${promUrl}${p}`);
  const body = await res.json() as any;
  assert.equal(body.status, 'success', `${p}: ${JSON.stringify(body)}`);
  return body.data;
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

before(async () => {
  if (!hasPrometheus) return;
  db = await createTestDb();
  kiln = await spawnKiln('serve', db.url, { KILN_METRICS_PORT: '0', KILN_METRICS_TOKEN: TOKEN });
  assert.ok(kiln.metrics, 'kiln serve printed its metrics URL');
  const target = new URL(kiln.metrics!);

  // The shipped configuration, with the compose network's DNS discovery replaced by this server.
  const config = YAML.parse(fs.readFileSync(path.join(root, 'docs/observability/prometheus.yml'), 'utf8'));
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-prometheus-'));
  config.global = { ...config.global, scrape_interval: '1s', evaluation_interval: '1s' };
  config.rule_files = [path.join(root, 'docs/prometheus/alerts.yml')];
  const job = config.scrape_configs.find((j: any) => j.job_name === 'kiln');
  assert.ok(job?.dns_sd_configs, 'the shipped job discovers api and worker replicas by DNS');
  delete job.dns_sd_configs;
  job.relabel_configs = [{ target_label: 'service', replacement: 'serve' }];
  job.static_configs = [{ targets: [target.host] }];
  job.metrics_path = target.pathname;
  job.authorization = { credentials: TOKEN };
  fs.writeFileSync(path.join(dir, 'prometheus.yml'), YAML.stringify(config));

  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  prom = spawn('prometheus', [
    `--config.file=${path.join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn',
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  prom.stderr!.on('data', (c: Buffer) => { stderr += c.toString(); });
  prom.once('exit', (code) => { if (code) process.stderr.write(`prometheus exited ${code}: ${stderr.slice(-2000)}\n`); });
  await until('prometheus to answer', async () => ((await fetch(`${promUrl}/-/ready`)).ok ? true : undefined));
});

after(async () => {
  if (prom && prom.exitCode === null) {
    prom.kill('SIGTERM');
    await new Promise((r) => prom!.once('exit', r));
  }
  await kiln?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('Prometheus scrapes Kiln with the shipped config: the target is up behind its Bearer token, and the families are there', async (t) => {
  if (!hasPrometheus) return void t.skip('prometheus not found (apt-get install prometheus)');
  const acct = await createAccount(db.sql);
  const { key } = await createKey(db.sql, acct.id);
  assert.equal((await api(kiln.base, key, '/usage')).status, 200);

  const targets = await until('the kiln target to be up', async () => {
    const d = await promApi('/api/v1/targets');
    return d.activeTargets.some((x: any) => x.labels.job === 'kiln' && x.health === 'up') ? d.activeTargets : undefined;
  });
  assert.equal(targets.length, 1);
  assert.equal(targets[0].labels.service, 'serve');
  const answered = await until('the GET /usage to be scraped', async () => {
    const d = await promApi(`/api/v1/query?query=${encodeURIComponent('kiln_http_requests_total{route="/api/v1/usage",status="200"}')}`);
    return d.result.length ? d.result : undefined;
  });
  assert.ok(Number(answered[0].value[1]) >= 1);
  const alive = await until('kiln_workers_alive', async () => {
    const d = await promApi(`/api/v1/query?query=${encodeURIComponent('kiln_workers_alive')}`);
    return d.result.length ? Number(d.result[0].value[1]) : undefined;
  });
  assert.ok(alive >= 1, 'kiln serve runs a worker');
});

test('every alert rule evaluates without error on real data; KilnNoWorker is inactive while a worker is alive', async (t) => {
  if (!hasPrometheus) return void t.skip('prometheus not found (apt-get install prometheus)');
  const rules = await until('two evaluations of every rule', async () => {
    const d = await promApi('/api/v1/rules?type=alert');
    const all = d.groups.flatMap((g: any) => g.rules);
    return all.length && all.every((r: any) => r.lastEvaluation && !r.lastEvaluation.startsWith('0001') && r.health !== 'unknown') ? all : undefined;
  });
  assert.deepEqual(rules.map((r: any) => r.name).sort(), ['KilnNoWorker', 'KilnProviderErrors', 'KilnQueueStalled', 'KilnStoreDown', 'KilnWebhookBacklogGrowing']);
  for (const r of rules) assert.equal(r.health, 'ok', `${r.name}: ${r.lastError}`);
  // kiln_store_up is 1 (the store in the database answers with it): not even pending.
  assert.equal(rules.find((r: any) => r.name === 'KilnStoreDown').state, 'inactive');
  // Pending at most until the first evaluation that sees the worker gauge (the rule counts a
  // missing series as no worker), then inactive.
  await until('KilnNoWorker to be inactive', async () => {
    const d = await promApi('/api/v1/rules?type=alert');
    const r = d.groups.flatMap((g: any) => g.rules).find((x: any) => x.name === 'KilnNoWorker');
    return r.state === 'inactive' ? true : undefined;
  }, 15_000);
  const firing = await promApi('/api/v1/alerts');
  assert.deepEqual(firing.alerts.filter((a: any) => a.state === 'firing').map((a: any) => a.labels.alertname), [], 'nothing fires on a healthy Kiln');
});

test('every query of the Grafana dashboard runs on Prometheus', async (t) => {
  if (!hasPrometheus) return void t.skip('prometheus not found (apt-get install prometheus)');
  const dashboard = JSON.parse(fs.readFileSync(path.join(root, 'docs/grafana/kiln.json'), 'utf8'));
  const exprs: string[] = [];
  const walk = (o: unknown): void => {
    if (Array.isArray(o)) o.forEach(walk);
    else if (o && typeof o === 'object') {
      const e = (o as { expr?: unknown }).expr;
      if (typeof e === 'string') exprs.push(e);
      Object.values(o).forEach(walk);
    }
  };
  walk(dashboard);
  assert.ok(exprs.length >= 10, `the dashboard has its panels (${exprs.length} queries)`);
  for (const expr of exprs) {
    // Grafana's interval variable, as it would substitute it for a 1 s scrape.
    const q = expr.replaceAll('$__rate_interval', '1m');
    const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(q)}`);
    const body = await res.json() as any;
    assert.equal(body.status, 'success', `${expr}: ${body.error}`);
  }
});
