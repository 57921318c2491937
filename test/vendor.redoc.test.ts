// /docs renders the OpenAPI document with Redoc's standalone bundle, vendored in vendor/redoc/
// (docs/console.md) instead of installed with the `redoc` package and its hundred-odd dependencies. The
// vendored files are the published ones, byte for byte: each matches the sha256 that
// vendor/redoc/update recorded in source.json from the npm tarball it checked against the
// recorded integrity; the bundle names the version source.json names; and the server serves
// that bundle, with only its CDN logo URL and source-map comment changed.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { startServer } from './_setup.ts';

const root = path.resolve(import.meta.dirname, '..');
const dir = path.join(root, 'vendor', 'redoc');
const source = JSON.parse(fs.readFileSync(path.join(dir, 'source.json'), 'utf8')) as {
  package: string; version: string; integrity: string; files: Record<string, string>;
};

test('vendor/redoc holds the bundle and its licenses, each with the sha256 recorded in source.json', () => {
  assert.equal(source.package, 'redoc');
  assert.match(source.version, /^\d+\.\d+\.\d+$/);
  assert.match(source.integrity, /^sha512-[A-Za-z0-9+/]{86}==$/);
  assert.deepEqual(Object.keys(source.files).sort(), ['LICENSE', 'redoc.standalone.js', 'redoc.standalone.js.LICENSE.txt']);
  for (const [name, hash] of Object.entries(source.files)) {
    const got = `sha256-${crypto.createHash('sha256').update(fs.readFileSync(path.join(dir, name))).digest('base64')}`;
    assert.equal(got, hash, `vendor/redoc/${name} differs from the published file (run vendor/redoc/update)`);
  }
  // The bundle's own header names its notices file, whose Redoc entry names the version.
  const bundle = fs.readFileSync(path.join(dir, 'redoc.standalone.js'), 'utf8');
  assert.ok(bundle.startsWith('/*! For license information please see redoc.standalone.js.LICENSE.txt */'));
  const notices = fs.readFileSync(path.join(dir, 'redoc.standalone.js.LICENSE.txt'), 'utf8');
  assert.match(notices, new RegExp(`ReDoc - OpenAPI/Swagger-generated API Reference Documentation[\\s\\S]*Version: "${source.version.replace(/\./g, '\\.')}"`));
  assert.match(fs.readFileSync(path.join(dir, 'LICENSE'), 'utf8'), /^The MIT License \(MIT\)/);
});

test('the redoc package is no dependency: the image carries only the vendored bundle', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  for (const field of ['dependencies', 'optionalDependencies', 'devDependencies']) {
    assert.equal(pkg[field]?.redoc, undefined, `package.json ${field} lists redoc`);
  }
  // .dockerignore must not drop the folder the server reads.
  const ignored = fs.readFileSync(path.join(root, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim());
  assert.ok(!ignored.some((l) => l && /^\/?vendor\b/.test(l)), '.dockerignore leaves vendor/ out of the image');
});

test('/docs loads the vendored bundle, served from this origin with an ETag naming its version', async () => {
  const srv = await startServer();
  const page = await fetch(`${srv.origin}/docs`);
  assert.equal(page.status, 200);
  const html = await page.text();
  assert.match(html, /<script src="\/docs\/redoc\.standalone\.js"><\/script>/);
  assert.doesNotMatch(html, /missing from this deployment/);

  const res = await fetch(`${srv.origin}/docs/redoc.standalone.js`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/javascript; charset=utf-8');
  const etag = res.headers.get('etag')!;
  assert.match(etag, new RegExp(`^"redoc-${source.version.replace(/\./g, '\\.')}-[0-9a-z]+"$`));
  const served = await res.text();
  const vendored = fs.readFileSync(path.join(dir, 'redoc.standalone.js'), 'utf8');
  assert.ok(vendored.includes('https://cdn.redoc.ly/redoc/logo-mini'), 'the published bundle names the CDN logo');
  assert.ok(!served.includes('cdn.redoc.ly'), 'the served bundle still names Redocly\'s CDN');
  assert.ok(!/sourceMappingURL/.test(served.slice(-200)));
  // Everything else is the published file.
  const normalize = (s: string) => s.replace(/https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini(-full)?\.svg/g, '/docs/redocly-logo.svg').replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n');
  assert.equal(served, normalize(vendored));

  const again = await fetch(`${srv.origin}/docs/redoc.standalone.js`, { headers: { 'if-none-match': etag } });
  assert.equal(again.status, 304);
});
