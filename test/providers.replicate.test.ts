// The replicate adapter against a real Replicate predictions-API peer on loopback: create (by
// model name or version, `Prefer: wait` for short models) → starting → processing → succeeded →
// output downloaded, run time reported for billing, failed/canceled/aborted predictions, 429 with
// retry-after, 5xx then success, malformed bodies, the job deadline and abort (both cancel the
// prediction), and a key that never leaves the configured origin.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import sharp from 'sharp';
import * as v from 'valibot';
import { ModelEntry } from '../src/cli/model-entry.ts';
import type { CatalogModel } from '../src/billing/catalog.ts';
import { createReplicateProvider } from '../src/providers/replicate.ts';
import type { ImageRequest } from '../src/providers/index.ts';
import { startLoopbackPeer, type LoopbackPeer } from './_peer.ts';
import { png, startReplicatePeer, type PeerReply, type ReplicatePeer } from './_replicate-peer.ts';
import { providerError } from './_adapter.ts';

const SECRET = 'r8_secret_token_123';
let peer: ReplicatePeer;
let elsewhere: LoopbackPeer;

function model(upstream: Record<string, unknown> = {}, over: Partial<CatalogModel> = {}): CatalogModel {
  return {
    id: 'rep/flux-schnell',
    name: 'FLUX schnell on Replicate',
    category: 'image',
    provider: 'replicate',
    upstream: { baseUrl: peer.url, model: 'black-forest-labs/flux-schnell', apiKeyEnv: 'KILN_TEST_REPLICATE_KEY', pollIntervalMs: 20, ...upstream },
    supports_image_input: false,
    input_modalities: ['text'],
    output_modalities: ['image'],
    cost: { micros_per_second: 1400 },
    maxOutputTokens: null,
    markup: 1,
    enabled: true,
    ...over,
  };
}

function provider(opts: { timeoutMs?: number; maxAttempts?: number } = {}) {
  return createReplicateProvider({ timeoutMs: 5000, maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20, env: { KILN_TEST_REPLICATE_KEY: SECRET }, ...opts });
}

function req(over: Partial<ImageRequest> = {}): ImageRequest {
  return { model: model(), prompt: 'A lighthouse at dusk', aspectRatio: '16:9', images: [], textInputs: [], signal: new AbortController().signal, ...over };
}

const rejection = (p: Promise<unknown>) => providerError(p, { key: SECRET, origin: peer.origin });

const paths = () => peer.requests.map((r) => `${r.method} ${r.path}`);
const prediction = () => [...peer.predictions.values()][0]!;

before(async () => {
  peer = await startReplicatePeer({ token: SECRET });
  elsewhere = await startLoopbackPeer(() => ({ json: { status: 'succeeded' } }));
});
after(async () => {
  await peer.close();
  await elsewhere.close();
});
beforeEach(() => {
  peer.requests.length = 0;
  peer.predictions.clear();
  peer.script(null);
  peer.plan(null);
  elsewhere.requests.length = 0;
});

describe('replicate adapter: predictions', () => {
  it('an official model by name: create, poll urls.get through starting → processing → succeeded, download the output, report predict_time', async () => {
    peer.plan(() => ({ starting: 1, processing: 2 }));
    const out = await provider().generateImage(req({ textInputs: [{ content: 'Moody', label: 'Style' }] }));
    const p = prediction();
    assert.deepEqual(p.statuses, ['starting', 'starting', 'processing', 'processing', 'succeeded']);
    assert.deepEqual(paths(), ['POST /v1/models/black-forest-labs/flux-schnell/predictions', ...Array(4).fill(`GET /v1/predictions/${p.id}`)]);
    for (const r of peer.requests) assert.equal(r.headers.authorization, `Bearer ${SECRET}`);
    const create = peer.requests[0]!;
    assert.equal(create.headers.prefer, undefined, 'no Prefer: wait unless configured');
    assert.deepEqual(Object.keys(create.json), ['input']);
    assert.match(create.json.input.prompt, /A lighthouse at dusk/);
    assert.match(create.json.input.prompt, /--- Style ---\nMoody/);
    assert.equal(create.json.input.aspect_ratio, '16:9');
    assert.equal(out.providerRequestId, p.id);
    assert.equal(out.billedSeconds, 1.25);
    // The peer drew 1344×768 (FLUX's 16:9); the adapter crops it to the exact ratio.
    assert.deepEqual([out.width, out.height, out.mediaType], [1344, 756, 'image/png']);
    const meta = await sharp(out.data).metadata();
    assert.deepEqual([meta.width, meta.height], [1344, 756]);
    assert.equal(p.canceled, false);
  });

  it('a model by version (upstream.version, or owner/name:version) is created at /predictions with the version; params merge, null removes', async () => {
    peer.plan(() => ({ starting: 0, processing: 1 }));
    await provider().generateImage(req({ model: model({ model: undefined, version: 'abc123def', params: { num_inference_steps: 4, aspect_ratio: null, width: 768 } }) }));
    let create = peer.requests[0]!;
    assert.equal(create.path, '/v1/predictions');
    assert.equal(create.json.version, 'abc123def');
    assert.deepEqual(create.json.input, { prompt: 'A lighthouse at dusk', num_inference_steps: 4, width: 768 });

    peer.requests.length = 0;
    await provider().generateImage(req({ model: model({ model: 'stability-ai/sdxl:39ed52f2' }) }));
    create = peer.requests[0]!;
    assert.equal(create.path, '/v1/predictions');
    assert.equal(create.json.version, '39ed52f2');
  });

  it('upstream.imageSizes turns the ratio into width/height for models that take pixel sizes', async () => {
    peer.plan(() => ({ starting: 0, processing: 0, final: { status: 'succeeded', output: async (p) => peer.file(`${p.id}.png`, await png(p.input.width, p.input.height)) } }));
    const out = await provider().generateImage(req({ aspectRatio: '2:3', model: model({ imageSizes: { '2:3': '832x1216' } }) }));
    const input = peer.requests[0]!.json.input;
    assert.deepEqual([input.width, input.height, 'aspect_ratio' in input], [832, 1216, false]);
    assert.deepEqual([out.width, out.height], [811, 1216], 'cropped to exactly 2:3');
  });

  it('the shipped catalog entries are valid and speak to the peer as documented', async () => {
    const root = path.resolve(import.meta.dirname, '..', 'catalog');
    const entry = (f: string) => {
      const parsed = v.safeParse(ModelEntry, JSON.parse(fs.readFileSync(path.join(root, f), 'utf8')));
      assert.ok(parsed.success, `${f}: ${JSON.stringify(parsed.issues)}`);
      const e = parsed.output as unknown as CatalogModel;
      assert.equal(e.provider, 'replicate');
      return { ...e, upstream: { ...e.upstream, baseUrl: peer.url, pollIntervalMs: 20 } } as CatalogModel;
    };
    const p = createReplicateProvider({ timeoutMs: 5000, baseDelayMs: 5, env: { REPLICATE_API_TOKEN: SECRET } });
    peer.plan(() => ({ starting: 0, processing: 1, final: { status: 'succeeded', predictTime: 3.5 } }));

    let out = await p.generateImage(req({ model: entry('replicate-flux-schnell.json') }));
    let create = peer.requests[0]!;
    assert.equal(create.path, '/v1/models/black-forest-labs/flux-schnell/predictions');
    assert.equal(create.json.input.aspect_ratio, '16:9');
    assert.equal(create.json.input.output_format, 'png');
    assert.equal(out.billedSeconds, 3.5);

    peer.requests.length = 0;
    const sdxl = entry('replicate-sdxl.json');
    assert.equal(sdxl.cost?.micros_per_second, 975);
    out = await p.generateImage(req({ model: sdxl, images: [{ data: await png(16, 16), mediaType: 'image/png' }] }));
    create = peer.requests[0]!;
    assert.equal(create.path, '/v1/predictions');
    assert.equal(create.json.version, sdxl.upstream!.version);
    assert.deepEqual([create.json.input.width, create.json.input.height, 'aspect_ratio' in create.json.input], [1344, 768, false]);
    assert.match(create.json.input.image, /^data:image\/png;base64,/);
    assert.equal(out.billedSeconds, 3.5);
  });

  it('image inputs go as `image` (one) or `input_images` (several) data URIs', async () => {
    peer.plan(() => ({ starting: 0, processing: 0 }));
    const a = await png(8, 8), b = await png(4, 4, '#00ff00');
    const m = model({}, { supports_image_input: true });
    await provider().generateImage(req({ model: m, images: [{ data: a, mediaType: 'image/png' }] }));
    assert.equal(peer.requests[0]!.json.input.image, `data:image/png;base64,${a.toString('base64')}`);
    peer.requests.length = 0;
    await provider().generateImage(req({ model: m, images: [{ data: a, mediaType: 'image/png' }, { data: b, mediaType: 'image/jpeg' }] }));
    assert.deepEqual(peer.requests[0]!.json.input.input_images, [`data:image/png;base64,${a.toString('base64')}`, `data:image/jpeg;base64,${b.toString('base64')}`]);
  });

  it('Prefer: wait=N (upstream.waitSeconds): a short model answers in the create itself, nothing polled', async () => {
    peer.plan(() => ({ syncMs: 150, final: { status: 'succeeded', predictTime: 2.5 } }));
    const out = await provider({ timeoutMs: 10_000 }).generateImage(req({ model: model({ waitSeconds: 5 }) }));
    assert.deepEqual(paths(), ['POST /v1/models/black-forest-labs/flux-schnell/predictions']);
    assert.equal(peer.requests[0]!.headers.prefer, 'wait=5');
    assert.equal(out.billedSeconds, 2.5);
    assert.equal(out.width, 1344);
  });

  it('Prefer: wait that ends before the model does: polled on as usual; never held longer than the job allows', async () => {
    peer.plan(() => ({ starting: 1, processing: 1 }));
    await provider({ timeoutMs: 10_000 }).generateImage(req({ model: model({ waitSeconds: 60 }) }));
    assert.equal(peer.requests[0]!.headers.prefer, 'wait=8', 'capped to the 10 s job less a margin');
    assert.equal(peer.requests.length, 4);
    peer.requests.length = 0;
    await provider({ timeoutMs: 2_000 }).generateImage(req({ model: model({ waitSeconds: 5 }) }));
    assert.equal(peer.requests[0]!.headers.prefer, undefined, 'no room to hold the create open');
  });

  it('output as a single URL or a data URL; no metrics → run time from started_at/completed_at', async () => {
    peer.plan(() => ({ starting: 0, processing: 0, final: { status: 'succeeded', predictTime: null, output: async () => peer.file('one.webp', await sharp({ create: { width: 300, height: 200, channels: 3, background: '#123456' } }).webp().toBuffer(), 'image/webp') } }));
    let out = await provider().generateImage(req({ aspectRatio: '3:2' }));
    assert.deepEqual([out.width, out.height, out.mediaType], [300, 200, 'image/webp']);
    assert.equal(out.billedSeconds, 2, 'completed_at − started_at');

    const img = await png(200, 200);
    peer.plan(() => ({ starting: 0, processing: 0, final: { status: 'succeeded', output: () => [`data:image/png;base64,${img.toString('base64')}`] } }));
    out = await provider().generateImage(req({ aspectRatio: '1:1' }));
    assert.deepEqual([out.width, out.height], [200, 200]);
  });

  it('the key never leaves the configured origin: urls.get / urls.cancel elsewhere are replaced by the documented ones', async () => {
    const far = `${elsewhere.origin}/v1/predictions/x`;
    peer.plan(() => ({ starting: 1, processing: 1, create: { urls: { get: far, cancel: `${far}/cancel` } } }));
    const out = await provider().generateImage(req());
    assert.equal(out.billedSeconds, 1.25);
    assert.equal(elsewhere.requests.length, 0);
    assert.equal(peer.requests.filter((r) => r.method === 'GET').length, 3);
  });

  it('generateText and malformed model/version settings are configuration errors (nothing sent)', async () => {
    const p = provider();
    assert.equal((await rejection(p.generateText({} as never))).code, 'config');
    for (const upstream of [{ model: 'flux' }, { model: 'a/b/c' }, { model: '../x' }, { model: undefined, version: 'not-a-version' }]) {
      assert.equal((await rejection(p.generateImage(req({ model: model(upstream) })))).code, 'config', JSON.stringify(upstream));
    }
    assert.equal(peer.requests.length, 0);
  });
});

describe('replicate adapter: failures', () => {
  it('a failed prediction: summarised (only its E#### code kept), retryable only for the transient codes', async () => {
    const cases = [
      [`E1001: CUDA out of memory while handling ${SECRET}`, 'upstream prediction failed (E1001)', false],
      ['NSFW content detected. Try running it again, or try a different prompt.', 'upstream prediction failed', false],
      ['E6716: Timeout starting prediction', 'upstream prediction failed (E6716)', true],
      ['Prediction interrupted; please retry (code: PA)', 'upstream prediction failed', true],
    ] as const;
    for (const [error, message, retryable] of cases) {
      peer.plan(() => ({ starting: 0, processing: 1, final: { status: 'failed', error } }));
      const err = await rejection(provider().generateImage(req()));
      assert.equal(err.message, message, error);
      assert.equal(err.retryable, retryable, error);
      assert.equal(err.code, retryable ? 'upstream_error' : 'rejected');
    }
    assert.equal(peer.requests.filter((r) => r.path.endsWith('/cancel')).length, 0, 'an ended prediction is not cancelled');
  });

  it('a succeeded prediction whose output download keeps failing is not created again: the error is final', async () => {
    let n = 0;
    peer.plan(() => ({ starting: 0, processing: 0, final: { status: 'succeeded', output: () => `${peer.origin}/out/lost.png` } }));
    peer.script((r) => (r.path === '/out/lost.png' ? (n++, { reset: true }) : undefined));
    const err = await rejection(provider({ maxAttempts: 2 }).generateImage(req()));
    assert.equal(err.code, 'network');
    assert.equal(err.retryable, false, 'running the job again would pay for a second prediction');
    assert.equal(n, 2, 'the download was tried twice');
    assert.equal(peer.predictions.size, 1);
  });

  it('canceled elsewhere and aborted upstream (its deadline passed before it ran) are terminal: not retryable', async () => {
    peer.plan(() => ({ starting: 0, processing: 0, final: { status: 'canceled' } }));
    let err = await rejection(provider().generateImage(req()));
    assert.equal(err.retryable, false);
    assert.match(err.message, /canceled/);
    peer.plan(() => ({ starting: 1, processing: 0, final: { status: 'aborted' } }));
    err = await rejection(provider().generateImage(req()));
    assert.equal(err.retryable, false);
    assert.equal(err.code, 'upstream_error', 'counts as the upstream failing (a fallback may take over)');
    assert.match(err.message, /aborted before it started/);
    assert.equal(peer.requests.filter((r) => r.method === 'POST' && !r.path.endsWith('/cancel')).length, 2, 'one create per call');
  });

  it('an invalid input (422 problem details) fails at once without the upstream text', async () => {
    peer.script(() => ({ status: 422, headers: { 'content-type': 'application/problem+json' }, json: { title: 'Input validation failed', detail: `- input.prompt: ${SECRET}`, status: 422 } }));
    const err = await rejection(provider().generateImage(req()));
    assert.equal(err.code, 'rejected');
    assert.equal(err.message, 'upstream provider returned 422');
    assert.equal(peer.requests.length, 1);
  });

  it('429 with retry-after (on the create and on a poll) is waited out, then succeeds', async () => {
    peer.plan(() => ({ starting: 1, processing: 0 }));
    let n = 0;
    peer.script((r): PeerReply | undefined => {
      n++;
      if (n === 1) return { status: 429, headers: { 'retry-after': '1' }, json: { title: 'Request was throttled', status: 429 } };
      if (n === 3 && r.method === 'GET') return { status: 429, headers: { 'retry-after': '0.3' }, json: { title: 'Request was throttled', status: 429 } };
      return undefined;
    });
    const started = Date.now();
    const out = await provider().generateImage(req());
    const took = Date.now() - started;
    assert.equal(out.billedSeconds, 1.25);
    assert.ok(took >= 1250, `waited ${took} ms for retry-after 1 s + 0.3 s`);
    assert.equal(peer.predictions.size, 1, 'the throttled create made no prediction');
    assert.equal(peer.requests.filter((r) => r.method === 'POST').length, 2);
  });

  it('5xx then success: the create and a poll are retried with backoff', async () => {
    peer.plan(() => ({ starting: 1, processing: 1 }));
    let n = 0;
    peer.script((r): PeerReply | undefined => {
      n++;
      if (n === 1) return { status: 500, json: { title: 'Internal server error', status: 500 } };
      if (n === 3 && r.method === 'GET') return { status: 503, body: 'unavailable' };
      if (n === 4 && r.method === 'GET') return { reset: true };
      return undefined;
    });
    const out = await provider().generateImage(req());
    assert.equal(out.width, 1344);
    assert.deepEqual(prediction().statuses, ['starting', 'starting', 'processing', 'succeeded']);
  });

  it('a create that keeps failing with 5xx fails retryable after its attempts', async () => {
    peer.script(() => ({ status: 502, body: `<html>bad gateway ${SECRET}</html>` }));
    const err = await rejection(provider({ maxAttempts: 2 }).generateImage(req()));
    assert.equal(err.retryable, true);
    assert.equal(err.message, 'upstream provider returned 502 after 2 attempts');
  });

  it('malformed bodies are bad responses (not JSON, no usable id, unknown status, no output); a running prediction is cancelled', async () => {
    peer.script(() => ({ body: 'not json {' }));
    let err = await rejection(provider().generateImage(req()));
    assert.equal(err.code, 'bad_response');
    assert.match(err.message, /malformed JSON/);

    peer.script(() => ({ status: 201, json: { id: 'a/../../b', status: 'starting' } }));
    err = await rejection(provider().generateImage(req()));
    assert.equal(err.code, 'bad_response');

    peer.requests.length = 0;
    peer.plan(() => ({ starting: 5, processing: 5 }));
    let gets = 0;
    peer.script((r) => (r.method === 'GET' && ++gets === 2 ? { json: { id: prediction().id, status: 'exploded' } } : undefined));
    err = await rejection(provider().generateImage(req()));
    assert.equal(err.code, 'bad_response');
    assert.equal(prediction().canceled, true, 'POST …/cancel reached the peer');
    const cancel = peer.requests.find((r) => r.path.endsWith('/cancel'))!;
    assert.equal(cancel.method, 'POST');
    assert.equal(cancel.headers.authorization, `Bearer ${SECRET}`);

    peer.predictions.clear();
    peer.script(null);
    peer.plan(() => ({ starting: 0, processing: 0, final: { status: 'succeeded', output: () => null } }));
    err = await rejection(provider().generateImage(req()));
    assert.equal(err.code, 'bad_response');
    assert.match(err.message, /no image/);
  });
});

describe('replicate adapter: deadline and abort', () => {
  it('a prediction that never finishes times out at the job deadline (retryable) and is cancelled', async () => {
    peer.plan(() => ({ starting: 1, processing: 1_000_000 }));
    const started = Date.now();
    const err = await rejection(provider({ timeoutMs: 400 }).generateImage(req()));
    const took = Date.now() - started;
    assert.equal(err.code, 'timeout');
    assert.equal(err.retryable, true);
    assert.ok(took >= 400 && took < 2500, `took ${took} ms`);
    assert.equal(prediction().canceled, true);
    assert.equal(prediction().status, 'canceled');
  });

  it('abort while processing: polling stops, the prediction is cancelled, the error is `aborted`', async () => {
    const ctl = new AbortController();
    let abortAt = 0;
    peer.plan(() => ({ starting: 0, processing: 1_000_000 }));
    peer.script((r) => {
      if (r.method === 'GET' && prediction().status === 'processing' && !abortAt) {
        abortAt = Date.now() + 30;
        setTimeout(() => ctl.abort(), 30);
      }
      return undefined;
    });
    const err = await rejection(provider().generateImage(req({ signal: ctl.signal })));
    assert.equal(err.code, 'aborted');
    assert.equal(prediction().canceled, true);
    const cancel = peer.requests.find((r) => r.path.endsWith('/cancel'))!;
    assert.ok(cancel.receivedAt - abortAt < 500, `cancel sent ${cancel.receivedAt - abortAt} ms after the abort`);
  });
});
