// One editable file per stored function and per view (docs/development.md, "Changing a function or
// a view"): db/functions/<schema>.<name>.sql holds the current definition of every overload of that
// function, db/views/<schema>.<name>.sql the view's, each as the catalog renders it. A change is an
// edit of that file; the migration that ships it names the file with `--! include functions/….sql`,
// which `applyCurrent` (tests, development) and `kiln gm commit` expand into its text, so a
// committed migration stays self-contained. test/db.definitions.test.ts checks that the migrations
// (committed and current) define exactly what the files hold.

import fs from 'node:fs';
import path from 'node:path';
import type postgres from 'postgres';

/** Kiln's own schemas: what db/schema.sql and the definition files describe. */
export const SCHEMAS = ['kiln', 'kiln_private'];

export const DB_DIR = path.resolve(import.meta.dirname, '..', '..', 'db');
export const DEFINITION_DIRS = ['functions', 'views'] as const;

type Tx = postgres.TransactionSql<{}> | postgres.Sql<{}>;

const literal = (s: string) => `'${s.replace(/'/g, "''")}'`;
const comment = (what: string, text: string | null) => (text == null ? '' : `comment on ${what} is ${literal(text)};\n`);

function header(file: string): string {
  return `-- ${file}: the current definition. Edit it here, and ship the change with\n` +
    `-- \`--! include ${file}\` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.\n\n`;
}

/** Every function and view of Kiln's schemas as its file: relative path (functions/kiln.x.sql) → text. */
export async function renderDefinitions(sql: postgres.Sql<{}>): Promise<Map<string, string>> {
  return await sql.begin('isolation level repeatable read read only', async (tx) => {
    await tx`set local search_path = ''`;
    const out = new Map<string, string[]>();
    const add = (file: string, text: string) => {
      const list = out.get(file) ?? [];
      list.push(text);
      out.set(file, list);
    };
    for (const r of await functionRows(tx)) {
      add(`functions/${r.schema}.${r.name}.sql`,
        `${r.def.trimEnd()};\n${comment(`${r.prokind === 'p' ? 'procedure' : 'function'} ${r.signature}`, r.comment)}`);
    }
    for (const v of await viewRows(tx)) {
      const kind = v.relkind === 'm' ? 'materialized view' : 'view';
      const create = v.relkind === 'm' ? `create materialized view if not exists` : 'create or replace view';
      let text = `${create} ${v.qname}${v.reloptions ? ` with (${v.reloptions.join(', ')})` : ''} as\n${v.def.trimEnd()}\n`;
      if (!text.trimEnd().endsWith(';')) text = text.trimEnd() + ';\n';
      text += comment(`${kind} ${v.qname}`, v.comment);
      for (const c of v.columns ?? []) text += comment(`column ${v.qname}.${c.ident}`, c.comment);
      add(`views/${v.schema}.${v.name}.sql`, text);
    }
    const files = new Map<string, string>();
    for (const [file, parts] of [...out.entries()].sort(([a], [b]) => a.localeCompare(b))) {
      files.set(file, header(file) + parts.join('\n'));
    }
    return files;
  });
}

async function functionRows(tx: Tx) {
  return await tx<Array<{ schema: string; name: string; def: string; prokind: string; signature: string; comment: string | null }>>`
    select n.nspname as schema, p.proname as name, pg_get_functiondef(p.oid) as def, p.prokind,
      p.oid::regprocedure::text as signature, obj_description(p.oid, 'pg_proc') as comment
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = any(${SCHEMAS}) and p.prokind in ('f', 'p', 'w')
      and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
    order by n.nspname, p.proname, pg_get_function_identity_arguments(p.oid)`;
}

async function viewRows(tx: Tx) {
  return await tx<Array<{ schema: string; name: string; qname: string; relkind: string; reloptions: string[] | null; def: string;
    comment: string | null; columns: Array<{ ident: string; comment: string | null }> | null }>>`
    select n.nspname as schema, c.relname as name, c.oid::regclass::text as qname, c.relkind, c.reloptions,
      pg_get_viewdef(c.oid, true) as def, obj_description(c.oid, 'pg_class') as comment,
      (select json_agg(json_build_object('ident', quote_ident(a.attname), 'comment', col_description(a.attrelid, a.attnum)) order by a.attnum)
       from pg_attribute a where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
         and col_description(a.attrelid, a.attnum) is not null) as columns
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = any(${SCHEMAS}) and c.relkind in ('v', 'm')
      and not exists (select 1 from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype = 'e')
    order by n.nspname, c.relname`;
}

/** The definition files on disk: relative path → text. */
export function readDefinitions(dir = DB_DIR): Map<string, string> {
  const files = new Map<string, string>();
  for (const sub of DEFINITION_DIRS) {
    const d = path.join(dir, sub);
    if (!fs.existsSync(d)) continue;
    for (const f of fs.readdirSync(d).filter((f) => f.endsWith('.sql')).sort()) {
      files.set(`${sub}/${f}`, fs.readFileSync(path.join(d, f), 'utf8'));
    }
  }
  return files;
}

/** Writes the files and removes those of definitions that no longer exist; what changed. */
export function writeDefinitions(files: Map<string, string>, dir = DB_DIR): { written: string[]; removed: string[] } {
  const onDisk = readDefinitions(dir);
  const written: string[] = [];
  const removed: string[] = [];
  for (const [file, text] of files) {
    if (onDisk.get(file) === text) continue;
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
    written.push(file);
  }
  for (const file of onDisk.keys()) {
    if (files.has(file)) continue;
    fs.rmSync(path.join(dir, file));
    removed.push(file);
  }
  return { written, removed };
}

const INCLUDE = /^--! include (\S+)[ \t]*$/gm;

/**
 * A migration's text with each `--! include <path>` line (a path under db/, e.g.
 * functions/kiln.start_generation.sql) replaced by that file's text, so the migration holds the
 * definition itself. Unknown or escaping paths are errors.
 */
export function expandIncludes(text: string, dir = DB_DIR): string {
  return text.replace(INCLUDE, (_line, rel: string) => {
    const file = path.resolve(dir, rel);
    if (!file.startsWith(dir + path.sep) || !DEFINITION_DIRS.some((d) => rel.startsWith(`${d}/`))) {
      throw new Error(`--! include ${rel}: only files under db/functions/ and db/views/ can be included`);
    }
    if (!fs.existsSync(file)) throw new Error(`--! include ${rel}: no such file (db/${rel})`);
    return `-- included from db/${rel}\n${fs.readFileSync(file, 'utf8').trimEnd()}\n-- end of db/${rel}`;
  });
}

/** Whether the text names a file to include. */
export function hasIncludes(text: string): boolean {
  INCLUDE.lastIndex = 0;
  return INCLUDE.test(text);
}
