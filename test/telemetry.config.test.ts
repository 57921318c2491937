// Issue 30: telemetry is configured by the environment alone. Tracing needs an OTLP endpoint and
// stays off when OTEL_SDK_DISABLED is true or another exporter is named; the /metrics listener
// needs KILN_METRICS_PORT, a bad port fails fast.

import assert from 'node:assert/strict';
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
