// Image input resolution: data: URI decoding, SSRF refusals (literal and resolved addresses,
// redirects, rebinding) and real https fetches from a loopback TLS peer reachable only by opt-in.

import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { isPublicAddress } from '../src/internal/address.ts';
import {
  decodeDataUri,
  fetchPublicUrl,
  InputError,
  resolveImageInput,
  resolveImageInputs,
  type FetchOptions,
  type Resolver,
} from '../src/providers/inputs.ts';

// Self-signed test-only certificate (CN kiln-test-peer; SAN localhost, img.test, rebind.test,
// redirect.test, 127.0.0.1; valid until 2126). Never trusted outside these tests.
const KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgl5xIb71cTt+W4st5
409qCLRd3Kdv0rkgEwi653O9X+ahRANCAATfR7nTDR8P3hsEwN4+TnacMQCdr8/n
LHhqLwM6PmAbScrgYvBAlSWibBdLnU+cZ8mHjEoUH/WqXoBVlL1P0wPb
-----END PRIVATE KEY-----`;
const CERT = `-----BEGIN CERTIFICATE-----
MIIBzTCCAXOgAwIBAgIUVNbkGBZ/cdaQHrL08Xi/smDyyXQwCgYIKoZIzj0EAwIw
GTEXMBUGA1UEAwwOa2lsbi10ZXN0LXBlZXIwIBcNMjYxMTIyMjIwNzM1WhgPMjEy
NjEwMjkyMjA3MzVaMBkxFzAVBgNVBAMMDmtpbG4tdGVzdC1wZWVyMFkwEwYHKoZI
zj0CAQYIKoZIzj0DAQcDQgAE30e50w0fD94bBMDePk52nDEAna/P5yx4ai8DOj5g
G0nK4GLwQJUlomwXS51PnGfJh4xKFB/1ql6AVZS9T9MD26OBljCBkzAdBgNVHQ4E
FgQULTq7DOAbdzTKlOa9XVt9LWdGN94wHwYDVR0jBBgwFoAULTq7DOAbdzTKlOa9
XVt9LWdGN94wDwYDVR0TAQH/BAUwAwEB/zBABgNVHREEOTA3gglsb2NhbGhvc3SC
CGltZy50ZXN0ggtyZWJpbmQudGVzdIINcmVkaXJlY3QudGVzdIcEfwAAATAKBggq
hkjOPQQDAgNIADBFAiAI9oApgPYw9raLM0Ll/ZSFX2x821K96fbdueC64Az2cgIh
AJ+wbzQgePXHUvE+WQVZUtvoQ4Z2VL5IASyft3SYiEKO
-----END CERTIFICATE-----`;

let PNG: Buffer;
let server: Server;
let port: number;
const hits: string[] = [];

/** Test DNS: names → fixed answers, counting lookups. */
function resolver(table: Record<string, string[]>, calls: string[] = []): Resolver {
  return async (host) => {
    calls.push(host);
    const ips = table[host];
    if (!ips) throw new Error('ENOTFOUND');
    return ips.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

const LOOPBACK_OK: Pick<FetchOptions, 'allowAddress' | 'ca'> = {
  allowAddress: (ip) => ip === '127.0.0.1',
  ca: CERT,
};

async function refused(p: Promise<unknown>, pattern: RegExp): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof InputError, `expected InputError, got ${String(err)}`);
    assert.match(err.message, pattern);
    return true;
  });
}

before(async () => {
  PNG = await sharp({ create: { width: 4, height: 3, channels: 3, background: '#ff8800' } }).png().toBuffer();
  server = createServer({ key: KEY, cert: CERT }, (req, res) => {
    hits.push(req.url ?? '');
    const u = new URL(req.url ?? '/', 'https://x');
    if (u.pathname === '/img.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
    if (u.pathname === '/text') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('hello');
    if (u.pathname === '/big') return void res.writeHead(200).end(Buffer.alloc(5000));
    if (u.pathname === '/chunked-big') {
      res.writeHead(200);
      for (let i = 0; i < 10; i++) res.write(Buffer.alloc(1000));
      return void res.end();
    }
    if (u.pathname === '/hang') return; // never answers
    if (u.pathname === '/redirect') return void res.writeHead(302, { location: u.searchParams.get('to') ?? '/img.png' }).end();
    if (u.pathname === '/loop') return void res.writeHead(302, { location: '/loop' }).end();
    res.writeHead(404).end();
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  port = (server.address() as AddressInfo).port;
});
after(() => {
  server.closeAllConnections();
  return new Promise<void>((ok) => server.close(() => ok()));
});

describe('isPublicAddress', () => {
  const blocked = [
    '127.0.0.1', '127.255.0.9', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254',
    '100.64.0.1', '100.127.255.254', '0.0.0.0', '0.1.2.3', '224.0.0.1', '239.255.255.250', '255.255.255.255',
    '240.0.0.1', '192.0.2.5', '198.18.0.1', '198.51.100.1', '203.0.113.9', '192.0.0.8',
    '::', '::1', 'fc00::1', 'fd12:3456::1', 'fe80::1', 'fe80::1%eth0', 'fec0::1', 'ff02::1', 'ff0e::1',
    '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:169.254.169.254', '::127.0.0.1',
    '64:ff9b::a9fe:a9fe', '64:ff9b::10.0.0.1', '2001:db8::1', '2001::1', '2002:7f00:1::1', '100::1',
    'not-an-ip', '', '1.2.3', '256.1.1.1',
  ];
  const allowed = ['1.1.1.1', '8.8.8.8', '93.184.215.14', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8', '64:ff9b::808:808'];
  for (const ip of blocked) it(`refuses ${ip || '(empty)'}`, () => assert.equal(isPublicAddress(ip), false));
  for (const ip of allowed) it(`allows ${ip}`, () => assert.equal(isPublicAddress(ip), true));
});

describe('data: URIs', () => {
  it('decodes base64', () => {
    const d = decodeDataUri(`data:image/png;base64,${PNG.toString('base64')}`);
    assert.ok(d.data.equals(PNG));
    assert.equal(d.mediaType, 'image/png');
  });

  it('decodes percent-encoded payloads and percent-encoded base64', () => {
    assert.deepEqual(decodeDataUri('data:image/svg+xml,%3Csvg%2F%3E%20ü').data.toString('utf8'), '<svg/> ü');
    const b64 = PNG.toString('base64').replace(/\+/g, '%2B').replace(/\//g, '%2F');
    assert.ok(decodeDataUri(`data:image/png;base64,${b64}`).data.equals(PNG));
  });

  it('uses the fallback type when the URI has none', () => {
    assert.equal(decodeDataUri(`data:;base64,${PNG.toString('base64')}`, 1e6, 'image/webp').mediaType, 'image/webp');
  });

  it('refuses oversize, malformed and empty URIs', () => {
    assert.throws(() => decodeDataUri(`data:image/png;base64,${Buffer.alloc(2000).toString('base64')}`, 1000), /larger than/);
    assert.throws(() => decodeDataUri(`data:image/png,${'a'.repeat(2000)}`, 1000), /larger than/);
    assert.throws(() => decodeDataUri('data:image/png;base64,@@@@'), /invalid base64/);
    assert.throws(() => decodeDataUri('data:image/png;base64'), /missing ","/);
    assert.throws(() => decodeDataUri('data:image/png;base64,'), /empty/);
  });

  it('resolves to sniffed image bytes regardless of the declared image type', async () => {
    const r = await resolveImageInput({ url: `data:image/jpeg;base64,${PNG.toString('base64')}`, mediaType: 'image/jpeg' });
    assert.ok('data' in r && r.data.equals(PNG));
    assert.equal(r.mediaType, 'image/png');
  });

  it('refuses non-image types and bytes', async () => {
    await refused(resolveImageInput({ url: `data:text/plain;base64,${PNG.toString('base64')}` }), /image type/);
    await refused(resolveImageInput({ url: 'data:image/png;base64,aGVsbG8=' }), /not a supported image/);
    await refused(resolveImageInput({ url: `data:image/png;base64,${PNG.toString('base64')}`, mediaType: 'application/pdf' }), /image type/);
    await refused(resolveImageInput({ url: 'data:image/svg+xml,%3Csvg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/%3E' }), /not a supported image/);
  });

  it('names the failing index', async () => {
    await refused(
      resolveImageInputs([{ url: `data:image/png;base64,${PNG.toString('base64')}` }, { url: 'http://example.com/x.png' }]),
      /^images\[1\]: image URL must use https$/,
    );
  });
});

describe('https fetch: refusals', () => {
  const literal = [
    'https://127.0.0.1/x.png', 'https://10.0.0.1/x.png', 'https://169.254.169.254/latest/meta-data/', 'https://[::1]/x.png',
    'https://[fc00::1]/x.png', 'https://[::ffff:127.0.0.1]/x.png', 'https://0.0.0.0/x.png', 'https://2130706433/x.png',
    'https://0x7f.1/x.png', 'https://[fe80::1]/x.png', 'https://100.64.0.1/x.png', 'https://224.0.0.1/x.png',
  ];
  for (const url of literal) {
    it(`refuses ${url}`, async () => {
      await refused(resolveImageInput({ url }), /host is not allowed/);
      await refused(resolveImageInput({ url }, { passUrls: true }), /host is not allowed/);
    });
  }

  it('refuses hostnames that resolve to non-public addresses', async () => {
    const dns = resolver({
      'lo.test': ['127.0.0.1'], 'ten.test': ['10.0.0.7'], 'meta.test': ['169.254.169.254'], 'v6.test': ['::1'],
      'ula.test': ['fc00::5'], 'mapped.test': ['::ffff:127.0.0.1'], 'mixed.test': ['93.184.215.14', '10.0.0.1'],
    });
    for (const host of ['lo.test', 'ten.test', 'meta.test', 'v6.test', 'ula.test', 'mapped.test', 'mixed.test']) {
      await refused(fetchPublicUrl(`https://${host}:${port}/img.png`, { resolve: dns, ca: CERT }), /host is not allowed/);
    }
    assert.equal(hits.length, 0, 'nothing reached the peer');
  });

  it('refuses the loopback peer by default, even with a resolver pointing at it', async () => {
    await refused(fetchPublicUrl(`https://img.test:${port}/img.png`, { resolve: resolver({ 'img.test': ['127.0.0.1'] }), ca: CERT }), /not allowed/);
    await refused(fetchPublicUrl(`https://127.0.0.1:${port}/img.png`, { ca: CERT }), /not allowed/);
    assert.equal(hits.length, 0);
  });

  it('refuses http, credentials and unresolvable names', async () => {
    await refused(fetchPublicUrl('http://example.com/x.png'), /must use https/);
    await refused(fetchPublicUrl('ftp://example.com/x.png'), /must use https/);
    await refused(fetchPublicUrl('https://user:pw@example.com/x.png'), /credentials/);
    await refused(fetchPublicUrl('not a url'), /not a valid URL/);
    await refused(fetchPublicUrl('https://nowhere.test/x.png', { resolve: resolver({}) }), /could not be resolved/);
  });

  it('passes https URLs through unchanged when the provider fetches them', async () => {
    const r = await resolveImageInput({ url: 'https://cdn.example.com/a.png?x=1', mediaType: 'image/webp' }, { passUrls: true });
    assert.deepEqual(r, { url: 'https://cdn.example.com/a.png?x=1', mediaType: 'image/webp' });
    await refused(resolveImageInput({ url: 'http://cdn.example.com/a.png' }, { passUrls: true }), /must use https/);
  });
});

describe('https fetch: loopback peer (opt-in)', () => {
  const opts = (extra: FetchOptions = {}): FetchOptions => ({
    ...LOOPBACK_OK,
    resolve: resolver({ 'img.test': ['127.0.0.1'], 'redirect.test': ['127.0.0.1'], 'evil.test': ['10.9.9.9'] }),
    ...extra,
  });

  it('fetches and sniffs an image', async () => {
    const r = await resolveImageInput({ url: `https://img.test:${port}/img.png` }, opts());
    assert.ok('data' in r && r.data.equals(PNG));
    assert.equal(r.mediaType, 'image/png');
  });

  it('rejects non-image bodies', async () => {
    await refused(resolveImageInput({ url: `https://img.test:${port}/text` }, opts()), /not a supported image/);
  });

  it('follows redirects, re-vetting each hop', async () => {
    const ok = await fetchPublicUrl(`https://redirect.test:${port}/redirect?to=${encodeURIComponent(`https://img.test:${port}/img.png`)}`, opts());
    assert.ok(ok.data.equals(PNG));
    await refused(fetchPublicUrl(`https://img.test:${port}/redirect?to=${encodeURIComponent(`https://evil.test:${port}/x`)}`, opts()), /not allowed/);
    await refused(fetchPublicUrl(`https://img.test:${port}/redirect?to=${encodeURIComponent('https://169.254.169.254/')}`, opts()), /not allowed/);
    await refused(fetchPublicUrl(`https://img.test:${port}/redirect?to=${encodeURIComponent(`http://img.test:${port}/img.png`)}`, opts()), /non-https/);
    await refused(fetchPublicUrl(`https://img.test:${port}/loop`, opts()), /too many times/);
  });

  it('connects to the vetted address without resolving again (no rebinding)', async () => {
    const calls: string[] = [];
    let n = 0;
    const rebinding: Resolver = async (host) => {
      calls.push(host);
      return [{ address: n++ === 0 ? '127.0.0.1' : '10.0.0.1', family: 4 }];
    };
    const r = await fetchPublicUrl(`https://rebind.test:${port}/img.png`, { ...LOOPBACK_OK, resolve: rebinding });
    assert.ok(r.data.equals(PNG));
    assert.deepEqual(calls, ['rebind.test']);
  });

  it('enforces the size cap by header and while streaming', async () => {
    await refused(fetchPublicUrl(`https://img.test:${port}/big`, opts({ maxBytes: 1000 })), /larger than/);
    await refused(fetchPublicUrl(`https://img.test:${port}/chunked-big`, opts({ maxBytes: 1000 })), /larger than/);
  });

  it('times out', async () => {
    const t0 = Date.now();
    await refused(fetchPublicUrl(`https://img.test:${port}/hang`, opts({ timeoutMs: 200 })), /timed out/);
    assert.ok(Date.now() - t0 < 2000);
  });

  it('reports upstream status codes', async () => {
    await refused(fetchPublicUrl(`https://img.test:${port}/missing`, opts()), /status 404/);
  });

  it('verifies TLS certificates', async () => {
    const { ca: _ca, ...noCa } = opts();
    await refused(fetchPublicUrl(`https://img.test:${port}/img.png`, noCa), /could not connect/);
  });
});
