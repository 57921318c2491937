// The README stays true to the code: its two set-up commands come first, every environment
// variable Kiln reads is documented, and every CLI command is listed.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { commands } from '../src/cli/commands.ts';
import { userCommands } from '../src/cli/user/index.ts';

const root = path.resolve(import.meta.dirname, '..');
const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');

test('the two set-up commands come first', () => {
  const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)![1];
  const lines = firstBlock.trim().split('\n').map((l) => l.replace(/\s+#.*$/, '').trim());
  assert.deepEqual(lines, ['npm install && npm start', 'npm install && npm test']);
});

test('every environment variable read in src/config.ts is documented', () => {
  const config = fs.readFileSync(path.join(root, 'src', 'config.ts'), 'utf8');
  const vars = [...config.matchAll(/\b(?:int|num|bool|str|opt)\('([A-Z_]+)'/g)].map((m) => m[1]);
  assert.ok(vars.length > 20);
  for (const v of vars) assert.ok(readme.includes(`\`${v}\``), `${v} is documented in README.md`);
});

test('every CLI command is documented', () => {
  for (const name of [...Object.keys(commands), ...Object.keys(userCommands)]) {
    // Table cells escape the pipe: `member add\|remove` documents both.
    const alt = name.replace(/ (add|remove)$/, ' add\\|remove');
    assert.ok(readme.includes(`kiln ${name}`) || readme.includes(`kiln ${alt}`), `kiln ${name} is documented`);
  }
});
