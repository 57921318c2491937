// The store's settings in src/config.ts: KILN_STORE, the KILN_S3_* settings, KILN_RETENTION's
// durations and the sweep interval; bad values fail at start with the variable's name.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.ts';
import { withEnv } from './_setup.ts';

const CLEAN = { KILN_STORE: undefined, KILN_S3_BUCKET: undefined, KILN_RETENTION: undefined, KILN_RETENTION_SWEEP_SECONDS: undefined };

test('postgres by default, outputs kept forever, a sweep every minute', () => {
  const { store } = withEnv(CLEAN, loadConfig);
  assert.equal(store.backend, 'postgres');
  assert.equal(store.s3, undefined);
  assert.equal(store.retentionSeconds, undefined);
  assert.equal(store.sweepSeconds, 60);
});

test('KILN_RETENTION takes 30d, 12h, 15m, 90s', () => {
  for (const [raw, secs] of [['30d', 2_592_000], ['12h', 43_200], ['15m', 900], ['90s', 90]] as const) {
    assert.equal(withEnv({ ...CLEAN, KILN_RETENTION: raw }, loadConfig).store.retentionSeconds, secs, raw);
  }
  for (const bad of ['30', '1w', '-5d', '0d', '1.5h', 'forever']) {
    assert.throws(() => withEnv({ ...CLEAN, KILN_RETENTION: bad }, loadConfig), (e: any) => e instanceof ConfigError && /KILN_RETENTION/.test(e.message), bad);
  }
});

test('s3 needs a bucket; its settings are read together', () => {
  assert.throws(() => withEnv({ ...CLEAN, KILN_STORE: 's3' }, loadConfig), /KILN_S3_BUCKET/);
  assert.throws(() => withEnv({ ...CLEAN, KILN_STORE: 'disk' }, loadConfig), /KILN_STORE must be postgres or s3/);
  assert.throws(() => withEnv({ ...CLEAN, KILN_S3_BUCKET: 'b', KILN_S3_ENDPOINT: 'minio:9000' }, loadConfig), /KILN_S3_ENDPOINT/);
  for (const prefix of ['../x', 'a/../b', 'a//b', '/abs']) {
    assert.throws(() => withEnv({ ...CLEAN, KILN_S3_BUCKET: 'b', KILN_S3_PREFIX: prefix }, loadConfig), /KILN_S3_PREFIX/, prefix);
  }
  assert.throws(() => withEnv({ ...CLEAN, KILN_RETENTION_SWEEP_SECONDS: '120' }, loadConfig), /KILN_RETENTION_SWEEP_SECONDS/);
  const { store } = withEnv({
    ...CLEAN, KILN_STORE: 's3', KILN_S3_BUCKET: 'outputs', KILN_S3_ENDPOINT: 'http://127.0.0.1:9000/', KILN_S3_REGION: 'eu-west-1',
    KILN_S3_FORCE_PATH_STYLE: '1', KILN_S3_PREFIX: 'kiln/', KILN_S3_REDIRECT: '0',
  }, loadConfig);
  assert.deepEqual(store.s3, {
    bucket: 'outputs', endpoint: 'http://127.0.0.1:9000', publicEndpoint: undefined, region: 'eu-west-1', forcePathStyle: true, prefix: 'kiln/', redirect: false,
  });
});

test('without a bucket, the API and worker never load the AWS SDK (about half a second of every start)', async () => {
  const { execFileSync } = await import('node:child_process');
  const script = `
    await import('./src/cli/serve.ts');
    await import('./src/http/files.ts');
    await import('./tasks/index.ts');
    const { createRequire } = await import('node:module');
    process.stdout.write(String(Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('@aws-sdk'))));`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: new URL('..', import.meta.url), encoding: 'utf8' });
  assert.equal(out, 'false');
});
