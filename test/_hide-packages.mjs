// `node --import ./test/_hide-packages.mjs …` with KILN_TEST_HIDE_PACKAGES=a,b: imports of those
// packages fail as they do when the package is not installed (ERR_MODULE_NOT_FOUND, in Node's own
// wording), as after an install with --omit=optional. Used by test/serve.embedded.test.ts.
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

const hidden = new Set((process.env.KILN_TEST_HIDE_PACKAGES ?? '').split(',').filter(Boolean));

export async function resolve(specifier, context, next) {
  const name = specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/');
  if (hidden.has(name)) {
    const e = new Error(`Cannot find package '${name}' imported from ${context.parentURL}`);
    e.code = 'ERR_MODULE_NOT_FOUND';
    throw e;
  }
  return next(specifier, context);
}

// Loaded with --import (the main thread): register this file as a module hook; in the hooks
// thread the same file provides `resolve`.
if (isMainThread) register(import.meta.url);
