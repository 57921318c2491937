// Issue 30: telemetry is configured by the environment alone. Tracing needs an OTLP endpoint and
// stays off when OTEL_SDK_DISABLED is true or another exporter is named; the /metrics listener
// needs KILN_METRICS_PORT, a bad port fails fast.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.ts';
import { createRequire } from 'node:module';
import { startTracing, stopTracing, tracingOn, tracingWanted } from '../src/telemetry/tracing.ts';
import { withEnv } from './_setup.ts';

test('tracing is wanted only with an OTLP endpoint, and not when the SDK is disabled', () => {
  assert.equal(tracingWanted({}), false);
  assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }), true);
  assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' }), true);
  assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' }), false);
  assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'none' }), false);
});

test('KILN_METRICS_PORT unset: no listener; set: port, host (default loopback) and token', () => {
  const none = withEnv({ KILN_METRICS_PORT: undefined, KILN_METRICS_HOST: undefined, KILN_METRICS_TOKEN: undefined }, loadConfig);
  assert.equal(none.metrics.port, undefined);
  const on = withEnv({ KILN_METRICS_PORT: '9464', KILN_METRICS_HOST: undefined, KILN_METRICS_TOKEN: 's3cret' }, loadConfig);
  assert.deepEqual(on.metrics, { port: 9464, host: '127.0.0.1', token: 's3cret' });
  assert.throws(() => withEnv({ KILN_METRICS_PORT: 'nine' }, loadConfig), ConfigError);
  assert.throws(() => withEnv({ KILN_METRICS_PORT: '70000' }, loadConfig), ConfigError);
});

test('without an endpoint the SDK is never loaded; with one it is, and OTLP over gRPC is refused', async () => {
  // The SDK packages are CommonJS: once imported they sit in the CommonJS module cache.
  const loaded = () => Object.keys(createRequire(import.meta.url).cache).filter((k) => /@opentelemetry[\\/](sdk-trace|exporter|resources)/.test(k));
  const off = await withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: undefined, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined }, () => startTracing());
  assert.equal(off, false);
  assert.equal(tracingOn(), false);
  assert.deepEqual(loaded(), []);
  await assert.rejects(
    withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, () => startTracing()),
    /http\/protobuf or http\/json/,
  );
  const on = await withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }, () => startTracing());
  assert.equal(on, true);
  assert.ok(loaded().length > 0);
  await stopTracing();
});

test('only the exporter of the configured protocol is loaded: none with tracing off, protobuf by default, JSON when asked', async () => {
  // A fresh process per case: the module caches of this one already hold what other tests loaded.
  const tracing = new URL('../src/telemetry/tracing.ts', import.meta.url).href;
  const script = `
    import { createRequire } from 'node:module';
    const { startTracing } = await import(${JSON.stringify(tracing)});
    const on = await startTracing();
    const loaded = Object.keys(createRequire(import.meta.url).cache)
      .map((k) => /@opentelemetry[\\\\/](exporter-trace-otlp-[a-z]+)[\\\\/]/.exec(k)?.[1]).filter(Boolean);
    process.stdout.write(JSON.stringify({ on, exporters: [...new Set(loaded)].sort() }));
    process.exit(0);
  `;
  const run = async (otel: Record<string, string>) => {
    const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_')));
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      env: { ...env, ...otel }, cwd: path.resolve(import.meta.dirname, '..'),
    });
    return JSON.parse(stdout) as { on: boolean; exporters: string[] };
  };
  const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' };
  const cases: Array<[Record<string, string>, { on: boolean; exporters: string[] }]> = [
    [{}, { on: false, exporters: [] }],
    [{ ...endpoint, OTEL_SDK_DISABLED: 'true' }, { on: false, exporters: [] }],
    [endpoint, { on: true, exporters: ['exporter-trace-otlp-proto'] }],
    [{ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' }, { on: true, exporters: ['exporter-trace-otlp-proto'] }],
    [{ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }, { on: true, exporters: ['exporter-trace-otlp-http'] }],
    // The traces-specific variable wins over the general one.
    [{ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }, { on: true, exporters: ['exporter-trace-otlp-http'] }],
  ];
  const results = await Promise.all(cases.map(([otel]) => run(otel)));
  for (const [i, [otel, expected]] of cases.entries()) assert.deepEqual(results[i], expected, JSON.stringify(otel));
});
