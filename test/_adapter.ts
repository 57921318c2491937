// Helpers for the adapter tests (providers.*.test.ts): the check every failure shares — a
// ProviderError whose message carries neither the key nor the upstream's URL — and a text request
// with the usual defaults.

import assert from 'node:assert/strict';
import type { CatalogModel } from '../src/billing/catalog.ts';
import { ProviderError, type TextRequest } from '../src/providers/index.ts';

/** The ProviderError `p` rejects with; its message names neither `hidden.key` nor `hidden.origin`. */
export async function providerError(p: Promise<unknown>, hidden: { key: string; origin: string }): Promise<ProviderError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ProviderError, `expected ProviderError, got ${String(err)}`);
    assert.ok(!err.message.includes(hidden.key), 'no key in the message');
    assert.ok(!err.message.includes(hidden.origin), 'no upstream URL in the message');
    return err;
  }
  assert.fail('expected a rejection');
}

export function textRequest(model: CatalogModel, over: Partial<TextRequest> = {}): TextRequest {
  return {
    model,
    prompt: 'A pricing card',
    targetLanguage: 'tsx',
    screenHtml: false,
    images: [],
    textInputs: [],
    maxTokens: 321,
    signal: new AbortController().signal,
    ...over,
  };
}
