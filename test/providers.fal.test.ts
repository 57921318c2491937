// The fal adapter against a real fal queue-API peer on loopback: submit → IN_QUEUE → IN_PROGRESS →
// COMPLETED → result → image, fal's URL rules, upstream failures, 429 with retry-after, 5xx then
// success, malformed bodies, the job deadline and abort (both cancel the upstream request), and a
// key that never leaves the configured origin.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import sharp from 'sharp';
import * as v from 'valibot';
import { ModelEntry } from '../src/cli/model-entry.ts';
import type { CatalogModel } from '../src/billing/catalog.ts';
import { createFalProvider } from '../src/providers/fal.ts';
import type { ImageRequest } from '../src/providers/index.ts';
import { png, startFalPeer, type FalPeer, type PeerReply } from './_fal-peer.ts';
import { startLoopbackPeer, type LoopbackPeer } from './_peer.ts';
import { providerError } from './_adapter.ts';

const SECRET = 'fal-key-secret-123:abc';
let peer: FalPeer;
let elsewhere: LoopbackPeer;

function model(over: Partial<CatalogModel> = {}, upstream: Record<string, unknown> = {}): CatalogModel {
  return {
    id: 'fal/flux-schnell',
    name: 'FLUX schnell on fal',
    category: 'image',
    provider: 'fal',
    upstream: { baseUrl: peer.url, app: 'fal-ai/flux/schnell', apiKeyEnv: 'KILN_TEST_FAL_KEY', pollIntervalMs: 20, ...upstream },
    supports_image_input: false,
    input_modalities: ['text'],
    output_modalities: ['image'],
    cost: { micros_per_image: 3000 },
    maxOutputTokens: null,
    markup: 1,
    enabled: true,
    ...over,
  };
}

function provider(opts: { timeoutMs?: number; maxAttempts?: number } = {}) {
  return createFalProvider({ timeoutMs: 5000, maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20, env: { KILN_TEST_FAL_KEY: SECRET }, ...opts });
}

function req(over: Partial<ImageRequest> = {}): ImageRequest {
  return { model: model(), prompt: 'A red fox', aspectRatio: '16:9', images: [], textInputs: [], signal: new AbortController().signal, ...over };
}

const rejection = (p: Promise<unknown>) => providerError(p, { key: SECRET, origin: peer.origin });

const paths = () => peer.requests.map((r) => `${r.method} ${r.path}`);
const job = () => [...peer.jobs.values()][0]!;

before(async () => {
  peer = await startFalPeer({ key: SECRET });
  elsewhere = await startLoopbackPeer(() => ({ json: { status: 'COMPLETED' } }));
});
after(async () => {
  await peer.close();
  await elsewhere.close();
});
beforeEach(() => {
  peer.requests.length = 0;
  peer.jobs.clear();
  peer.script(null);
  peer.plan(null);
  elsewhere.requests.length = 0;
});

describe('fal adapter: the queue protocol', () => {
  it('submits to the app, polls IN_QUEUE → IN_PROGRESS → COMPLETED under owner/app, fetches the result and returns the image', async () => {
    peer.plan(() => ({ queued: 2, running: 2 }));
    const out = await provider().generateImage(req({ textInputs: [{ content: 'Brand: Kiln', label: 'Brief' }] }));
    const j = job();
    assert.deepEqual(j.statuses, ['IN_QUEUE', 'IN_QUEUE', 'IN_PROGRESS', 'IN_PROGRESS', 'COMPLETED']);
    assert.deepEqual(paths(), [
      'POST /fal-ai/flux/schnell',
      ...Array(5).fill(`GET /fal-ai/flux/requests/${j.id}/status`),
      `GET /fal-ai/flux/requests/${j.id}`,
    ]);
    for (const r of peer.requests) assert.equal(r.headers.authorization, `Key ${SECRET}`);
    const submit = peer.requests[0]!;
    assert.equal(submit.headers['content-type'], 'application/json');
    assert.match(submit.json.prompt, /A red fox/);
    assert.match(submit.json.prompt, /--- Brief ---\nBrand: Kiln/);
    assert.equal(submit.json.image_size, 'landscape_16_9');
    assert.equal(submit.json.num_images, 1);
    assert.equal(submit.json.image_url, undefined, 'a text-only model gets no image');
    assert.deepEqual([out.width, out.height, out.mediaType], [1024, 576, 'image/png']);
    const meta = await sharp(out.data).metadata();
    assert.deepEqual([meta.width, meta.height, meta.format], [1024, 576, 'png']);
    assert.equal(out.providerRequestId, j.id);
    assert.equal(j.canceled, false);
  });

  it('maps every aspect ratio to fal image_size (presets or explicit sizes) and crops to the exact ratio', async () => {
    const want = {
      '1:1': ['square_hd', [1024, 1024]], '9:16': ['portrait_16_9', [576, 1024]], '4:3': ['landscape_4_3', [1024, 768]],
      '3:4': ['portrait_4_3', [768, 1024]], '3:2': [{ width: 1152, height: 768 }, [1152, 768]], '2:3': [{ width: 768, height: 1152 }, [768, 1152]],
    } as const;
    peer.plan(() => ({ queued: 0, running: 0 }));
    for (const [ratio, [size, dims]] of Object.entries(want)) {
      peer.requests.length = 0;
      const out = await provider().generateImage(req({ aspectRatio: ratio as ImageRequest['aspectRatio'] }));
      assert.deepEqual(peer.requests[0]!.json.image_size, size, ratio);
      assert.deepEqual([out.width, out.height], dims, ratio);
    }
  });

  it('sends image inputs as image_url / image_urls data URIs, honours imageSizes and merges params (null removes a default)', async () => {
    peer.plan(() => ({ queued: 0, running: 0 }));
    const a = await png(8, 8), b = await png(4, 4, '#00ff00');
    const m = model({ supports_image_input: true }, { app: 'fal-ai/flux/dev/image-to-image', params: { strength: 0.8, num_images: null }, imageSizes: { '16:9': '1280x720' } });
    const out = await provider().generateImage(req({ model: m, images: [{ data: a, mediaType: 'image/png' }] }));
    const submit = peer.requests[0]!;
    assert.equal(submit.path, '/fal-ai/flux/dev/image-to-image');
    assert.equal(peer.requests[1]!.path, `/fal-ai/flux/requests/${job().id}/status`, 'the whole sub-path is dropped');
    assert.equal(submit.json.image_url, `data:image/png;base64,${a.toString('base64')}`);
    assert.equal(submit.json.strength, 0.8);
    assert.equal('num_images' in submit.json, false);
    assert.deepEqual(submit.json.image_size, { width: 1280, height: 720 });
    assert.deepEqual([out.width, out.height], [1280, 720]);

    peer.requests.length = 0;
    await provider().generateImage(req({ model: m, images: [{ data: a, mediaType: 'image/png' }, { data: b, mediaType: 'image/png' }] }));
    assert.deepEqual(peer.requests[0]!.json.image_urls, [`data:image/png;base64,${a.toString('base64')}`, `data:image/png;base64,${b.toString('base64')}`]);
    assert.equal(peer.requests[0]!.json.image_url, undefined);
  });

  it('keeps a namespace in the queue paths (workflows/owner/app/…)', async () => {
    peer.plan(() => ({ queued: 1, running: 0 }));
    await provider().generateImage(req({ model: model({}, { app: 'workflows/acme/pipeline/step' }) }));
    assert.deepEqual(paths().map((p) => p.replace(job().id, 'ID')), [
      'POST /workflows/acme/pipeline/step', 'GET /workflows/acme/pipeline/requests/ID/status',
      'GET /workflows/acme/pipeline/requests/ID/status', 'GET /workflows/acme/pipeline/requests/ID',
    ]);
  });

  it('accepts a result image given as a data URL', async () => {
    const img = await png(320, 180);
    peer.plan(() => ({ queued: 0, running: 0, result: () => ({ json: { images: [{ url: `data:image/png;base64,${img.toString('base64')}` }] } }) }));
    const out = await provider().generateImage(req());
    assert.deepEqual([out.width, out.height], [320, 180]);
  });

  it('the key never leaves the configured origin: returned URLs elsewhere are replaced by the documented ones', async () => {
    const far = `${elsewhere.origin}/fal-ai/flux/requests/x`;
    peer.plan(() => ({ queued: 1, running: 1, submit: { status_url: `${far}/status`, response_url: far, cancel_url: `${far}/cancel` } }));
    const out = await provider().generateImage(req());
    assert.equal(out.width, 1024);
    assert.equal(elsewhere.requests.length, 0, 'nothing was sent to the other origin');
    assert.equal(peer.requests.filter((r) => r.path.endsWith('/status')).length, 3);
  });

  it('the shipped catalog entry is valid and speaks to the peer as documented', async () => {
    const parsed = v.safeParse(ModelEntry, JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '..', 'catalog', 'fal-flux-schnell.json'), 'utf8')));
    assert.ok(parsed.success, JSON.stringify(parsed.issues));
    const entry = parsed.output as unknown as CatalogModel;
    assert.equal(entry.provider, 'fal');
    peer.plan(() => ({ queued: 1, running: 1 }));
    const p = createFalProvider({ timeoutMs: 5000, baseDelayMs: 5, env: { FAL_KEY: SECRET } });
    const out = await p.generateImage(req({ aspectRatio: '1:1', model: { ...entry, upstream: { ...entry.upstream, baseUrl: peer.url, pollIntervalMs: 20 } } }));
    const submit = peer.requests[0]!;
    assert.equal(submit.path, '/fal-ai/flux/schnell');
    assert.equal(submit.headers.authorization, `Key ${SECRET}`);
    assert.deepEqual([submit.json.image_size, submit.json.num_inference_steps, submit.json.num_images], ['square_hd', 4, 1]);
    assert.deepEqual([out.width, out.height], [1024, 1024]);
  });

  it('generateText and a malformed app id are configuration errors (nothing sent)', async () => {
    const p = provider();
    assert.equal((await rejection(p.generateText({} as never))).code, 'config');
    for (const app of ['flux', 'fal-ai/../admin', 'fal-ai/fl ux']) {
      const err = await rejection(p.generateImage(req({ model: model({}, { app }) })));
      assert.equal(err.code, 'config', app);
    }
    assert.equal(peer.requests.length, 0);
  });
});

describe('fal adapter: failures', () => {
  it('an app error (422 content policy) fails at once, not retryable, summarised without upstream text', async () => {
    peer.plan(() => ({
      queued: 0, running: 1,
      result: () => ({ status: 422, json: { detail: [{ loc: ['body', 'prompt'], msg: `flagged: ${SECRET} a red fox`, type: 'content_policy_violation', input: 'a red fox' }] } }),
    }));
    const err = await rejection(provider().generateImage(req()));
    assert.equal(err.code, 'rejected');
    assert.equal(err.retryable, false);
    assert.equal(err.message, 'upstream provider returned 422 (content_policy_violation)');
    assert.doesNotMatch(err.message, /flagged|red fox/);
    assert.equal(peer.requests.filter((r) => r.method === 'GET' && !r.path.endsWith('/status')).length, 1, 'a 4xx result is not fetched again');
    assert.equal(job().canceled, false, 'a completed request is not cancelled');
  });

  it('a completed request whose result is a 5xx (fal retried it already) fails at once: fetched once, not retryable, error_type kept', async () => {
    for (const [status, type] of [[500, 'runner_disconnected'], [503, 'runner_scheduling_failure'], [504, 'request_timeout']] as const) {
      peer.requests.length = 0;
      peer.jobs.clear();
      peer.plan(() => ({ queued: 0, running: 1, result: () => ({ status, json: { detail: `failed after retries ${SECRET}`, error_type: type } }) }));
      const err = await rejection(provider({ maxAttempts: 3 }).generateImage(req()));
      assert.equal(err.code, 'upstream_error', type);
      assert.equal(err.retryable, false, type);
      assert.equal(err.message, `upstream provider returned ${status} (${type})`);
      assert.equal(peer.requests.filter((r) => r.method === 'GET' && !r.path.endsWith('/status')).length, 1, `${type}: the result is fetched once`);
      assert.equal(peer.requests.filter((r) => r.method === 'POST').length, 1);
      assert.equal(job().canceled, false, 'a completed request is not cancelled');
    }
  });

  it('the error type may come only in the X-Fal-Error-Type header (a body that is not JSON)', async () => {
    peer.plan(() => ({ queued: 0, running: 0, result: () => ({ status: 500, headers: { 'x-fal-error-type': 'internal_error', 'content-type': 'text/plain' }, body: 'Internal Server Error' }) }));
    const err = await rejection(provider().generateImage(req()));
    assert.equal(err.retryable, false);
    assert.equal(err.message, 'upstream provider returned 500 (internal_error)');
  });

  it('a network reset while fetching a completed result retries that fetch only: one submission, the image returned', async () => {
    peer.plan(() => ({ queued: 0, running: 1 }));
    let resets = 0;
    peer.script((r) => (r.method === 'GET' && !r.path.endsWith('/status') && resets++ === 0 ? { reset: true } : undefined));
    const out = await provider().generateImage(req());
    assert.equal(out.width, 1024);
    assert.deepEqual(paths().map((p) => p.replace(job().id, 'ID')), [
      'POST /fal-ai/flux/schnell', 'GET /fal-ai/flux/requests/ID/status', 'GET /fal-ai/flux/requests/ID/status',
      'GET /fal-ai/flux/requests/ID', 'GET /fal-ai/flux/requests/ID',
    ]);
    assert.equal(peer.jobs.size, 1);
  });

  it('the image of a completed request: a reset or a 503 while downloading it retries the download only; a 404 fails at once', async () => {
    const img = await png(64, 48);
    let n = 0;
    peer.plan(() => ({ queued: 0, running: 0, result: () => ({ json: { images: [{ url: `${peer.origin}/out/image.png` }] } }) }));
    peer.script((r) => {
      if (r.path !== '/out/image.png') return undefined;
      n++;
      if (n === 1) return { reset: true };
      if (n === 2) return { status: 503, body: 'busy' };
      return { headers: { 'content-type': 'image/png' }, body: img };
    });
    const out = await provider({ maxAttempts: 3 }).generateImage(req({ aspectRatio: '4:3' }));
    assert.deepEqual([out.width, out.height], [64, 48]);
    assert.equal(n, 3, 'downloaded on the third try');
    assert.equal(peer.jobs.size, 1, 'one submission');

    peer.requests.length = 0;
    peer.jobs.clear();
    n = 0;
    peer.script((r) => (r.path === '/out/image.png' ? (n++, { status: 404, body: 'gone' }) : undefined));
    const err = await rejection(provider({ maxAttempts: 3 }).generateImage(req()));
    assert.equal(err.retryable, false);
    assert.match(err.message, /download returned 404/);
    assert.equal(n, 1, 'a 404 is not tried again');
  });

  it('a result fetch that keeps failing on the network fails after its attempts, not retryable: the request is never submitted again', async () => {
    peer.plan(() => ({ queued: 0, running: 0 }));
    peer.script((r) => (r.method === 'GET' && !r.path.endsWith('/status') ? { reset: true } : undefined));
    const err = await rejection(provider({ maxAttempts: 2 }).generateImage(req()));
    assert.equal(err.code, 'network');
    assert.equal(err.retryable, false);
    assert.match(err.message, /after 2 attempts$/);
    assert.equal(peer.requests.filter((r) => r.method === 'GET' && !r.path.endsWith('/status')).length, 2);
    assert.equal(peer.jobs.size, 1);
  });

  it('the job deadline while fetching a completed result is not retryable either', async () => {
    peer.plan(() => ({ queued: 0, running: 0 }));
    peer.script((r) => (r.method === 'GET' && !r.path.endsWith('/status') ? { hang: true } : undefined));
    const err = await rejection(provider({ timeoutMs: 400 }).generateImage(req()));
    assert.equal(err.code, 'timeout');
    assert.equal(err.retryable, false);
    assert.equal(job().canceled, false, 'nothing to cancel: the request had completed');
  });

  it('the safety checker blanking the image is a refusal, not an output', async () => {
    peer.plan(() => ({
      queued: 0, running: 0,
      result: async () => ({ json: { images: [{ url: peer.file('black.png', await png(64, 36, '#000000')) }], has_nsfw_concepts: [true] } }),
    }));
    const err = await rejection(provider().generateImage(req()));
    assert.equal(err.code, 'rejected');
    assert.match(err.message, /declined/);
  });

  it('429 with retry-after (on submit and on a poll) is waited out, then succeeds', async () => {
    peer.plan(() => ({ queued: 1, running: 0 }));
    let n = 0;
    peer.script((r): PeerReply | undefined => {
      n++;
      if (n === 1) return { status: 429, headers: { 'retry-after': '1' }, json: { detail: 'Too many requests' } };
      if (n === 3 && r.path.endsWith('/status')) return { status: 429, headers: { 'retry-after-ms': '300' }, json: { detail: 'Too many requests' } };
      return undefined;
    });
    const started = Date.now();
    const out = await provider().generateImage(req());
    const took = Date.now() - started;
    assert.equal(out.width, 1024);
    assert.ok(took >= 1250, `waited ${took} ms for retry-after 1 s + 300 ms`);
    assert.deepEqual(paths().slice(0, 4).map((p) => p.replace(/requests\/[^/]+/, 'requests/ID')), [
      'POST /fal-ai/flux/schnell', 'POST /fal-ai/flux/schnell', 'GET /fal-ai/flux/requests/ID/status', 'GET /fal-ai/flux/requests/ID/status',
    ]);
    assert.equal(peer.jobs.size, 1, 'the rate-limited submit created nothing');
  });

  it('5xx then success: the submit and a status poll are retried with backoff', async () => {
    peer.plan(() => ({ queued: 1, running: 1 }));
    let n = 0;
    peer.script((r) => {
      n++;
      if (n === 1) return { status: 503, json: { detail: 'Service unavailable' } };
      if (n === 3 && r.path.endsWith('/status')) return { status: 500, body: 'upstream exploded' };
      if (n === 4 && r.path.endsWith('/status')) return { reset: true };
      return undefined;
    });
    const out = await provider({ maxAttempts: 3 }).generateImage(req());
    assert.equal(out.height, 576);
    assert.deepEqual(job().statuses, ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED']);
  });

  it('a submit that keeps failing with 5xx fails retryable after its attempts', async () => {
    peer.script(() => ({ status: 502, json: { detail: `bad gateway ${SECRET}` } }));
    const err = await rejection(provider({ maxAttempts: 2 }).generateImage(req()));
    assert.equal(err.retryable, true);
    assert.equal(err.message, 'upstream provider returned 502 after 2 attempts');
    assert.equal(peer.requests.length, 2);
  });

  it('malformed bodies are bad responses: a submit that is not JSON or has no request id fails at once', async () => {
    peer.script(() => ({ body: '{"request_id": ', headers: { 'content-type': 'application/json' } }));
    let err = await rejection(provider().generateImage(req()));
    assert.equal(err.code, 'bad_response');
    assert.match(err.message, /malformed JSON/);
    assert.equal(peer.requests.length, 1);

    peer.requests.length = 0;
    peer.script(() => ({ json: { request_id: '../../admin' } }));
    err = await rejection(provider().generateImage(req()));
    assert.equal(err.code, 'bad_response');
    assert.equal(peer.requests.length, 1, 'an unusable id is never put in a URL');
  });

  it('an unknown status mid-way is a bad response, and the still-running request is cancelled', async () => {
    peer.plan(() => ({ queued: 5, running: 5 }));
    let polls = 0;
    peer.script((r) => (r.path.endsWith('/status') && ++polls === 2 ? { status: 200, json: { status: 'EXPLODED' } } : undefined));
    const err = await rejection(provider().generateImage(req()));
    assert.equal(err.code, 'bad_response');
    assert.equal(err.retryable, false);
    assert.equal(job().canceled, true);
    const cancel = peer.requests.find((r) => r.method === 'PUT');
    assert.ok(cancel, 'the cancel reached the peer');
    assert.equal(cancel.path, `/fal-ai/flux/requests/${job().id}/cancel`);
    assert.equal(cancel.headers.authorization, `Key ${SECRET}`);
  });

  it('a result without images is a bad response', async () => {
    peer.plan(() => ({ queued: 0, running: 0, result: () => ({ json: { images: [], seed: 1 } }) }));
    const err = await rejection(provider().generateImage(req()));
    assert.equal(err.code, 'bad_response');
    assert.match(err.message, /no image/);
  });
});

describe('fal adapter: deadline and abort', () => {
  it('a request that never completes times out at the job deadline (retryable) and is cancelled upstream', async () => {
    peer.plan(() => ({ queued: 1_000_000 }));
    const started = Date.now();
    const err = await rejection(provider({ timeoutMs: 400 }).generateImage(req()));
    const took = Date.now() - started;
    assert.equal(err.code, 'timeout');
    assert.equal(err.retryable, true);
    assert.match(err.message, /timed out after 400 ms/);
    assert.ok(took >= 400 && took < 2500, `took ${took} ms`);
    assert.equal(job().canceled, true, 'PUT …/cancel reached the peer');
    assert.ok(job().polls >= 3, 'it was polling until the deadline');
  });

  it("an entry's upstream.timeoutMs is its job deadline, in place of the adapter's", async () => {
    peer.plan(() => ({ queued: 1_000_000 }));
    const err = await rejection(provider({ timeoutMs: 60_000 }).generateImage(req({ model: model({}, { timeoutMs: 300 }) })));
    assert.equal(err.code, 'timeout');
    assert.match(err.message, /timed out after 300 ms/);
    assert.equal(job().canceled, true);
    // `kiln model upsert` takes 100 ms to an hour, in whole milliseconds.
    const shipped = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '..', 'catalog', 'fal-flux-schnell.json'), 'utf8'));
    const check = (timeoutMs: unknown) => v.safeParse(ModelEntry, { ...shipped, upstream: { ...shipped.upstream, timeoutMs } }).success;
    assert.deepEqual([100, 90_000, 3_600_000].map(check), [true, true, true]);
    assert.deepEqual([99, 3_600_001, 1.5, '500', null].map(check), [false, false, false, false, false]);
  });

  it('a status poll that hangs is cut at the deadline too, and the request cancelled', async () => {
    peer.plan(() => ({ queued: 5 }));
    peer.script((r) => (r.path.endsWith('/status') ? { hang: true } : undefined));
    const err = await rejection(provider({ timeoutMs: 300, maxAttempts: 1 }).generateImage(req()));
    assert.equal(err.code, 'timeout');
    assert.equal(job().canceled, true);
  });

  it('abort while running: the poll stops, the upstream request is cancelled, the error is `aborted`', async () => {
    const ctl = new AbortController();
    let abortedAt = 0;
    peer.plan(() => ({ queued: 1, running: 1_000_000 }));
    peer.script((r) => {
      if (r.path.endsWith('/status') && job().statuses.at(-1) === 'IN_PROGRESS' && !abortedAt) {
        abortedAt = Date.now() + 30;
        setTimeout(() => ctl.abort(), 30);
      }
      return undefined;
    });
    const err = await rejection(provider().generateImage(req({ signal: ctl.signal })));
    assert.equal(err.code, 'aborted');
    assert.equal(job().canceled, true);
    const cancel = peer.requests.find((r) => r.method === 'PUT')!;
    assert.ok(cancel.receivedAt - abortedAt < 500, `cancel sent ${cancel.receivedAt - abortedAt} ms after the abort`);
    assert.equal(peer.requests.some((r) => r.method === 'GET' && !r.path.endsWith('/status')), false, 'no result fetched');
  });

  it('an already-aborted signal sends nothing', async () => {
    const ctl = new AbortController();
    ctl.abort();
    const err = await rejection(provider().generateImage(req({ signal: ctl.signal })));
    assert.equal(err.code, 'aborted');
    assert.equal(peer.requests.length, 0);
  });
});
