// The repository stands alone: no file points at documents a clone does not have (the parent
// folder's shared notes, a spec, design or style document outside the tree, or a comment citing
// the spec or the design in capitals, as a document). The contract is docs/api.md and the OpenAPI document, and the parts are
// described in docs/architecture.md. Committed migrations are immutable and left out.
// (Relative links between the markdown pages are checked by test/readme.test.ts.)

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const root = path.resolve(import.meta.dirname, '..');

/** Directories never scanned: installs, history, local databases and scratch space (.gitignore), and the immutable migrations. */
const SKIP_DIRS = new Set(['node_modules', '.git', '.kiln', '.scratch', 'tmp', 'coverage', 'test-results', 'test/artifacts', '.ci/node24', 'db/migrations/committed']);
const MAX_BYTES = 4 * 1024 * 1024;

/** Every text file of the repository, as paths relative to its root. */
function repositoryFiles(): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const entry of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (!SKIP_DIRS.has(child) && !SKIP_DIRS.has(entry.name) && !entry.name.startsWith('.kiln-test')) walk(child);
      } else if (entry.isFile() && entry.name !== '.git' && !entry.name.endsWith('.log')) {
        out.push(child);
      }
    }
  };
  walk('');
  return out.sort();
}

/** Text of a file, or null for a binary (a NUL in its first 8 KB) or an oversized one. */
function textOf(rel: string): string | null {
  const file = path.join(root, rel);
  if (fs.statSync(file).size > MAX_BYTES) return null;
  const bytes = fs.readFileSync(file);
  if (bytes.subarray(0, 8192).includes(0)) return null;
  return bytes.toString('utf8');
}

// Spelled in pieces so that this file does not match itself.
const cap = (s: string) => s.toUpperCase();
const MISSING_DOCUMENTS = [['..', 'shared'].join('/'), `${cap('spec')}.md`, `${cap('design')}.md`, `${cap('style')}.md`];
/** The spec or the design as a word in capitals: a document's name (ASPECT_RATIOS and the like are other words). */
const DOCUMENT_NAME = new RegExp(`\\b(?:${cap('spec')}|${cap('design')})\\b`);

/** What in `text` points outside the repository: "line: excerpt" for each offending line. */
function outsideReferences(text: string): string[] {
  const found: string[] = [];
  text.split('\n').forEach((line, i) => {
    if (MISSING_DOCUMENTS.some((d) => line.includes(d)) || DOCUMENT_NAME.test(line)) found.push(`${i + 1}: ${line.trim().slice(0, 120)}`);
  });
  return found;
}

test('the check recognises every way of pointing outside the repository, and nothing else', () => {
  for (const bad of [
    `See \`../${'shared'}/${cap('spec')}.md\` for the API contract.`,
    `// key, limits and enqueue in one transaction (${cap('design')}.md Execution).`,
    `follows ${cap('style')}.md`,
    `/** The public shape of a model (${cap('spec')} "Model"). */`,
    `// the graph as ${cap('design')} stores it`,
    `test('structuredOutput per ${cap('spec')}', …)`,
  ]) {
    assert.equal(outsideReferences(`first line\n${bad}\n`).length, 1, bad);
    assert.match(outsideReferences(bad)[0]!, /^1: /);
  }
  for (const fine of [
    'ASPECT_RATIOS.map((r) => r)',
    `const ${cap('spec')}_VERSIONS = ['2025-06-18'];`,
    "'FINISH_REASON_UNSPECIFIED'",
    'KILN_S3_FORCE_PATH_STYLE',
    'the OpenAPI spec at /api/v1/openapi.json (docs/api.md); the design of the console',
    '[Architecture](docs/architecture.md)',
  ]) {
    assert.deepEqual(outsideReferences(fine), [], fine);
  }
});

test('the scan covers the repository: sources, tests, docs and configuration, but no install or committed migration', () => {
  const files = repositoryFiles();
  for (const f of ['README.md', 'docs/api.md', 'docs/architecture.md', 'src/config.ts', 'tasks/index.ts', 'bin/kiln.js', 'db/schema.sql', 'package.json', 'docker-compose.yml', 'test/readme.test.ts']) {
    assert.ok(files.includes(f), `${f} is scanned`);
  }
  assert.ok(files.some((f) => f.startsWith('db/functions/')), 'db/functions is scanned');
  assert.ok(files.some((f) => f.startsWith('db/migrations/current/')), 'the current migration is scanned');
  assert.ok(!files.some((f) => f.startsWith('node_modules/') || f.startsWith('db/migrations/committed/') || f.startsWith('.git/')));
  assert.ok(files.length > 500, `${files.length} files`);
});

test('no file points at documents outside the repository, nor names the spec or the design (in capitals) as a document', () => {
  const offences: string[] = [];
  let scanned = 0;
  for (const rel of repositoryFiles()) {
    const text = textOf(rel);
    if (text === null) continue;
    scanned++;
    for (const hit of outsideReferences(text)) offences.push(`${rel}:${hit}`);
  }
  assert.ok(scanned > 500, `${scanned} text files scanned`);
  assert.deepEqual(offences, [], 'cite docs/api.md (or a section of it), docs/architecture.md, another docs/ page or the OpenAPI schema instead');
});
