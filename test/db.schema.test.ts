// db/schema.sql is what the committed migrations produce: a database migrated from
// db/migrations/committed/ only (not current/, unlike the test template) dumps to the same text.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { dumpCommittedSchema, dumpSchema, SCHEMA_FILE } from '../src/db/schema-dump.ts';
import { createTestDb } from './_setup.ts';

/** The first differing lines and the counts either side, instead of two 3,000-line strings. */
function diffSummary(expected: string, actual: string): string {
  const a = expected.split('\n');
  const b = actual.split('\n');
  let first = 0;
  while (first < a.length && first < b.length && a[first] === b[first]) first++;
  const inA = new Set(a);
  const inB = new Set(b);
  const onlyFile = a.filter((l) => !inB.has(l));
  const onlyDb = b.filter((l) => !inA.has(l));
  const show = (ls: string[]) => ls.slice(0, 15).map((l) => `    ${l}`).join('\n') + (ls.length > 15 ? `\n    … ${ls.length - 15} more` : '');
  return [
    `${path.relative(process.cwd(), SCHEMA_FILE)} is stale: run \`npm run db:schema\` and commit it.`,
    `  first difference at line ${first + 1}:`,
    `    file:       ${a[first] ?? '(end of file)'}`,
    `    migrations: ${b[first] ?? '(end of dump)'}`,
    `  ${onlyFile.length} line(s) only in the file:`,
    show(onlyFile),
    `  ${onlyDb.length} line(s) only in what the migrations produce:`,
    show(onlyDb),
  ].join('\n');
}

test('db/schema.sql matches a database migrated with the committed migrations', async () => {
  const adminUrl = process.env.KILN_TEST_ADMIN_URL;
  if (!adminUrl) throw new Error('run tests with `npm test` (it prepares the database)');
  const actual = await dumpCommittedSchema(adminUrl);
  const expected = fs.existsSync(SCHEMA_FILE) ? fs.readFileSync(SCHEMA_FILE, 'utf8') : '';
  if (actual !== expected) assert.fail(diffSummary(expected, actual));
});

test('the dump is stable and carries no OIDs', async () => {
  const db = await createTestDb();
  const one = await dumpSchema(db.sql);
  assert.equal(await dumpSchema(db.sql), one);
  assert.doesNotMatch(one, /\boid\b.*\d{5,}|pg_temp_\d|\d{4}-\d{2}-\d{2}T\d{2}:/);
  for (const kind of ['create schema kiln;', 'create table kiln_private.accounts', '-- view kiln.models: db/views/kiln.models.sql', '-- function kiln.authorize_requests(']) {
    assert.ok(one.includes(kind), `the dump has ${kind}`);
  }
});

test('a change to the schema changes the dump', async () => {
  const db = await createTestDb();
  const before = await dumpSchema(db.sql);
  await db.sql.unsafe(`
    alter table kiln_private.tiers add column note text default 'x' check (length(note) < 10);
    create index tiers_note_idx on kiln_private.tiers (note);
    comment on column kiln_private.tiers.note is 'A note.';
    create function kiln.f(a int) returns int language sql immutable as 'select a';
    create function kiln.f(a text) returns text language sql immutable as 'select a';`);
  const after = await dumpSchema(db.sql);
  // Trailing commas depend on what follows in the table: compare without them.
  const added = after.split('\n').filter((l) => !before.includes(l)).map((l) => l.replace(/,$/, ''));
  for (const line of [
    `  note text default 'x'::text`,
    '  constraint tiers_note_check CHECK ((length(note) < 10))',
    'CREATE INDEX tiers_note_idx ON kiln_private.tiers USING btree (note);',
    `comment on column kiln_private.tiers.note is 'A note.';`,
    '-- function kiln.f(integer): db/functions/kiln.f.sql',
    '-- function kiln.f(text): db/functions/kiln.f.sql',
  ]) {
    assert.ok(added.includes(line), `the dump gained ${JSON.stringify(line)}; added:\n${added.join('\n')}`);
  }
  assert.ok(after.indexOf('kiln.f(integer)') < after.indexOf('kiln.f(text)'), 'overloads are ordered by argument types');
});

test('every BRIN index summarizes itself: an unsummarized range is read whole by every scan', async () => {
  const db = await createTestDb();
  const rows = await db.sql`
    select c.relname as name, coalesce(c.reloptions, '{}') as options
    from pg_class c join pg_am am on am.oid = c.relam join pg_namespace n on n.oid = c.relnamespace
    where am.amname = 'brin' and n.nspname in ('kiln', 'kiln_private')`;
  assert.ok(rows.length >= 1, 'the generations BRIN index');
  for (const r of rows) assert.ok(r.options.includes('autosummarize=on'), `${r.name} has autosummarize on`);
});
