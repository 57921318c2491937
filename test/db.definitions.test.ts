// One editable file per function and view (src/db/definitions.ts, docs/development.md): the
// migrations, committed and current, define exactly what db/functions/ and db/views/ hold; each
// file applies as it is; `--! include` puts a file's text into a migration.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { expandIncludes, readDefinitions, renderDefinitions } from '../src/db/definitions.ts';
import { createTestDb, onCleanup } from './_setup.ts';

function differences(files: Map<string, string>, migrated: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [file, text] of migrated) {
    const onDisk = files.get(file);
    if (onDisk === undefined) out.push(`db/${file} is missing: the migrations define it (run \`npm run db:schema\`)`);
    else if (onDisk !== text) {
      const a = onDisk.split('\n');
      const b = text.split('\n');
      let i = 0;
      while (i < a.length && a[i] === b[i]) i++;
      out.push(`db/${file} differs from what the migrations define, at line ${i + 1}:\n    file:       ${a[i] ?? '(end)'}\n    migrations: ${b[i] ?? '(end)'}\n` +
        `  If you edited the file, add \`--! include ${file}\` to db/migrations/current/; if a migration changed it, run \`npm run db:schema\`.`);
    }
  }
  for (const file of files.keys()) if (!migrated.has(file)) out.push(`db/${file} defines nothing the migrations make: remove it, or include it in a migration`);
  return out;
}

test('the migrations (committed and current) define exactly what db/functions/ and db/views/ hold', async () => {
  const db = await createTestDb();
  const migrated = await renderDefinitions(db.sql);
  const files = readDefinitions();
  assert.ok(migrated.size > 200, `${migrated.size} definitions`);
  assert.ok([...migrated.keys()].some((f) => f.startsWith('views/')));
  const diff = differences(files, migrated);
  assert.ok(diff.length === 0, diff.slice(0, 5).join('\n') + (diff.length > 5 ? `\n… ${diff.length - 5} more` : ''));
});

test('every definition file applies as it is, and leaves the definitions unchanged', async () => {
  const db = await createTestDb();
  const files = readDefinitions();
  await db.sql.begin(async (tx) => {
    for (const [file, text] of files) {
      try {
        await tx.unsafe(text);
      } catch (e) {
        throw new Error(`db/${file}: ${(e as Error).message}`);
      }
    }
  });
  const diff = differences(files, await renderDefinitions(db.sql));
  assert.deepEqual(diff, []);
});

test('an edited file reaches the database through --! include, and only known files can be included', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-defs-'));
  onCleanup(async () => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, 'functions'));
  const source = readDefinitions().get('functions/kiln.get_usage.sql')!;
  assert.ok(source, 'kiln.get_usage has its file');
  // An edit: the comment of the function, in its one file.
  const edited = source.replace(/comment on function kiln\.get_usage\(([^)]*)\) is '[^']*(?:''[^']*)*';/, "comment on function kiln.get_usage($1) is 'Edited in its file.';");
  assert.notEqual(edited, source);
  fs.writeFileSync(path.join(dir, 'functions', 'kiln.get_usage.sql'), edited);
  const migration = `-- Enter migration here\n--! include functions/kiln.get_usage.sql\nselect 1;\n`;
  const expanded = expandIncludes(migration, dir);
  assert.match(expanded, /-- included from db\/functions\/kiln\.get_usage\.sql\n-- functions\/kiln\.get_usage\.sql: the current definition/);
  assert.doesNotMatch(expanded, /^--! include/m);
  assert.match(expanded, /select 1;\n$/);

  const db = await createTestDb();
  await db.sql.unsafe(expanded);
  const after = await renderDefinitions(db.sql);
  assert.equal(after.get('functions/kiln.get_usage.sql'), edited, 'the database now holds the edited file exactly');

  assert.throws(() => expandIncludes('--! include functions/kiln.nope.sql', dir), /no such file/);
  assert.throws(() => expandIncludes('--! include ../roles.sql', dir), /only files under db\/functions\/ and db\/views\//);
  assert.throws(() => expandIncludes('--! include functions/../../etc.sql', dir), /only files under/);
});

test('committed migrations are named after what they change, and graphile-migrate records them by number, so a rename is safe', async () => {
  const dir = path.resolve(import.meta.dirname, '..', 'db', 'migrations', 'committed');
  for (const f of fs.readdirSync(dir)) {
    const m = /^(\d{6})-([a-z0-9]+(?:[-_][a-z0-9]+)*)\.sql$/.exec(f);
    assert.ok(m, `${f}: NNNNNN-words.sql`);
    // graphile-migrate cuts a long --message at 60 characters, mid-word: keep names short.
    assert.ok(m[2]!.length <= 50, `${f}: a name of at most 50 characters (a short --message)`);
  }
  const db = await createTestDb();
  const rows = await db.sql`select filename from graphile_migrate.migrations`;
  assert.ok(rows.length >= 60);
  assert.ok(rows.every((r) => /^\d{6}\.sql$/.test(r.filename)), 'only the number is recorded');
});
