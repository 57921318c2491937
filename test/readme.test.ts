// The README and docs/ stay true to the code: README's two set-up commands come first and it links
// every docs page; every environment variable Kiln reads and every CLI command is documented
// somewhere in them; the catalog entries they show are valid entries, and the shipped ones are
// shown as they are in catalog/; the analyst queries they list are the ones in
// db/examples/analyst.sql; docs/mcp.md's tool table names every MCP tool and each argument it
// takes; and every relative link and #anchor of every markdown file in the repository resolves.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import * as v from 'valibot';
import { commands } from '../src/cli/commands.ts';
import { ModelEntry } from '../src/cli/model-entry.ts';
import { userCommands } from '../src/cli/user/index.ts';
import type { Context } from '../src/context.ts';
import { GenerationRequest } from '../src/generations/schemas.ts';
import { kilnTools } from '../src/mcp/tools/index.ts';

const root = path.resolve(import.meta.dirname, '..');
const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');
const readme = read('README.md');
const docs = fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`);
const pages = new Map(['README.md', ...docs].map((f) => [f, read(f)]));
const everything = [...pages.values()].join('\n');

/** Every markdown file of the repository outside installs and history (BENCH.md, db/ERROR_CODES.md, …). */
function markdownFiles(dir = ''): string[] {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory()) return e.name === 'node_modules' || e.name.startsWith('.') ? [] : markdownFiles(rel);
    return e.isFile() && e.name.endsWith('.md') ? [rel] : [];
  });
}

/** Markdown outside fenced code blocks (a `#` line in a shell snippet is not a heading). */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '');
const fences = (text: string, lang: string) => [...text.matchAll(new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\``, 'gm'))].map((m) => m[1]!);

test('the two set-up commands come first', () => {
  const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)![1]!;
  const lines = firstBlock.trim().split('\n').map((l) => l.replace(/\s+#.*$/, '').trim());
  assert.deepEqual(lines, ['npm install && npm start', 'npm install && npm test']);
});

test('README fits a newcomer: under 250 lines, a first curl and the console before the docs list', () => {
  const lines = readme.split('\n').length;
  assert.ok(lines <= 250, `README.md has ${lines} lines`);
  const docsList = readme.indexOf('## Documentation');
  assert.ok(docsList > 0);
  assert.ok(readme.slice(0, docsList).includes('curl -s -H "Authorization: Bearer $KEY"'), 'a first curl');
  assert.match(readme.slice(0, docsList), /served at `\/console`/);
});

test('README links every docs page', () => {
  for (const page of docs) assert.ok(readme.includes(`](${page})`), `README links ${page}`);
});

test('every environment variable read in src/config.ts is documented', () => {
  const config = read('src/config.ts');
  const vars = [...config.matchAll(/\b(?:int|num|bool|str|opt)\('([A-Z_]+)'/g)].map((m) => m[1]);
  assert.ok(vars.length > 20);
  for (const name of vars) assert.ok(everything.includes(`\`${name}\``), `${name} is documented in README.md or docs/`);
});

test('every CLI command is documented', () => {
  for (const name of [...Object.keys(commands), ...Object.keys(userCommands)]) {
    // Table cells escape the pipe: `member add\|remove` documents both.
    const alt = name.replace(/ (add|remove)$/, ' add\\|remove');
    assert.ok(everything.includes(`kiln ${name}`) || everything.includes(`kiln ${alt}`), `kiln ${name} is documented`);
  }
});

test('catalog entries shown are valid, and a shipped one is shown as it is in catalog/', () => {
  const shipped = new Map<string, unknown>();
  for (const f of fs.readdirSync(path.join(root, 'catalog')).filter((f) => f.endsWith('.json'))) {
    const { description: _, ...entry } = JSON.parse(read(`catalog/${f}`));
    shipped.set(entry.id, entry);
  }
  let checked = 0;
  for (const [file, text] of pages) {
    for (const block of fences(text, 'json').filter((b) => b.startsWith('{"id":'))) {
      const entry = JSON.parse(block);
      const parsed = v.safeParse(ModelEntry, entry);
      assert.ok(parsed.success, `${file}: ${entry.id} is a valid catalog entry: ${JSON.stringify(parsed.issues?.[0]?.message)}`);
      if (shipped.has(entry.id)) {
        assert.deepEqual(entry, shipped.get(entry.id), `${file} shows catalog entry ${entry.id} as it is in catalog/`);
        checked++;
      }
    }
  }
  // openai/gpt-image-1, anthropic, gemini, fal and replicate each show one.
  assert.ok(checked >= 5, `${checked} shipped entries shown`);
  assert.ok(pages.get('docs/providers.md')!.includes('{"id":"openai/gpt-image-1"'));
});

test('the analyst queries listed are the ones in db/examples/analyst.sql', () => {
  const inFile = [...read('db/examples/analyst.sql').matchAll(/^-- name: (\S+)/gm)].map((m) => m[1]);
  const listed = [...pages.get('docs/analysts.md')!.matchAll(/^\| `([a-z0-9-]+)` \|/gm)].map((m) => m[1]);
  assert.deepEqual(listed, inFile);
});

/** GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = m[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, '').replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n ? `${slug}-${n}` : slug);
  }
  return out;
}

/**
 * The link targets of a markdown text outside fenced code: inline links and images (`](target)`,
 * `](<target>)`, with or without a title), reference definitions (`[name]: target`) and HTML
 * `href`/`src` attributes.
 */
function linkTargets(text: string): string[] {
  const body = prose(text);
  return [
    ...[...body.matchAll(/\]\(\s*(?:<([^>\n]*)>|([^)\s]+))(?:\s+(?:"[^"\n]*"|'[^'\n]*'|\([^)\n]*\)))?\s*\)/g)].map((m) => m[1] ?? m[2]!),
    ...[...body.matchAll(/^ {0,3}\[[^\]\n]+\]:\s*<?([^\s>]+)>?/gm)].map((m) => m[1]!),
    ...[...body.matchAll(/\b(?:href|src)="([^"]+)"/g)].map((m) => m[1]!),
  ];
}

test('the link finder sees every kind of markdown link', () => {
  const sample = [
    'A [plain](docs/a.md), a [titled](docs/b.md "B") and an [angled](<docs/c d.md>) link, an ![image](docs/e.png),',
    'a [section](#here), an [outside](https://example.com) one and <a href="docs/f.md">HTML</a>.',
    '',
    '[ref]: docs/g.md#part',
    '',
    '```sh',
    'echo "[not a link](docs/h.md)"',
    '```',
  ].join('\n');
  assert.deepEqual(linkTargets(sample), ['docs/a.md', 'docs/b.md', 'docs/c d.md', 'docs/e.png', '#here', 'https://example.com', 'docs/g.md#part', 'docs/f.md']);
});

test('every relative link and #anchor in every markdown file of the repository resolves', () => {
  const files = markdownFiles();
  for (const f of ['README.md', 'BENCH.md', 'db/ERROR_CODES.md', ...docs]) assert.ok(files.includes(f), `${f} is checked`);
  let links = 0;
  for (const file of files) {
    for (const target of linkTargets(read(file))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      links++;
      const [rel, anchor] = target.split('#') as [string, string | undefined];
      const resolved = rel ? path.posix.normalize(path.posix.join(path.posix.dirname(file), decodeURI(rel))) : file;
      assert.ok(!resolved.startsWith('../') && fs.existsSync(path.join(root, resolved)), `${file}: ${target} → ${resolved} does not exist in the repository`);
      if (anchor) {
        assert.ok(resolved.endsWith('.md'), `${file}: ${target}`);
        assert.ok(anchorsOf(read(resolved)).has(anchor), `${file}: ${target} — no heading #${anchor} in ${resolved}`);
      }
    }
  }
  assert.ok(links > 40, `${links} links checked`);
});

test('docs/mcp.md: the tool table names every tool and every argument each takes', () => {
  // Building the tools touches no context: their handlers are not called here.
  const tools = kilnTools({} as Context);
  const section = prose(read('docs/mcp.md')).split('## Tools')[1]!.split('\n## ')[0]!;
  const rows = new Map<string, string>();
  for (const line of section.split('\n')) {
    const cells = line.split(/(?<!\\)\|/).map((c) => c.trim());
    const name = /^`(\w+)`$/.exec(cells[1] ?? '')?.[1];
    if (name) rows.set(name, cells[3]!);
  }
  assert.deepEqual([...rows.keys()].sort(), tools.map((t) => t.name).sort());
  const ticked = (text: string) => new Set([...text.matchAll(/`(\w+)`/g)].map((m) => m[1]!));
  for (const tool of tools) {
    const cell = rows.get(tool.name)!;
    const takes = Object.keys((tool.inputSchema as { properties?: object }).properties ?? {});
    const named = ticked(cell);
    // "the generation request without `a`, `b`": every field of POST /generations but those.
    const without = /the generation request without ([^;(]+)/.exec(cell);
    if (without) {
      const left = ticked(without[1]!);
      for (const f of left) assert.ok(!takes.includes(f), `${tool.name}: docs/mcp.md says it does not take ${f}`);
      for (const f of Object.keys(GenerationRequest.entries)) if (!left.has(f)) named.add(f);
    }
    const missing = takes.filter((a) => !named.has(a));
    assert.deepEqual(missing, [], `${tool.name}: arguments missing from docs/mcp.md's table`);
  }
});
