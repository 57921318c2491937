// upstream.params merging, shared by every network adapter: values replace Kiln's, null removes a
// default, Kiln's own fields stay, and keys that would reach the object's prototype are ignored.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withParams } from '../src/providers/upstream.ts';

test('params replace and remove defaults, keep the adapter\'s own fields, and never touch a prototype', () => {
  // As an entry written straight through SQL arrives: JSON.parse makes "__proto__" an own key.
  const params = JSON.parse('{"quality":"low","size":null,"model":"other","__proto__":{"polluted":true},"constructor":{"x":1}}');
  const out = withParams({ model: 'm', size: '1024x1024', n: 1 }, params, new Set(['model']));
  assert.deepEqual(out, { model: 'm', n: 1, quality: 'low' });
  assert.equal(Object.getPrototypeOf(out), Object.prototype);
  assert.equal((out as { polluted?: unknown }).polluted, undefined);
  assert.equal(JSON.stringify(out), '{"model":"m","n":1,"quality":"low"}');
});
