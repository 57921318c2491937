// db/schema.sql: the `kiln` and `kiln_private` schemas as one readable file, built from the
// catalogs (embedded Postgres 18 ships no pg_dump, and an older pg_dump refuses a newer server).
// Output is sorted and free of OIDs, owners and timestamps, so the file diffs cleanly.

import fs from 'node:fs';
import path from 'node:path';
import postgres from 'postgres';
import { SCHEMAS } from './definitions.ts';
import { migrate } from './migrate.ts';
import type { Sql } from './pool.ts';

export { SCHEMAS };
export const SCHEMA_FILE = path.resolve(import.meta.dirname, '..', '..', 'db', 'schema.sql');

const HEADER = `-- The kiln and kiln_private schemas as the committed migrations leave them (db/migrations/committed/).
-- Generated: do not edit. Regenerate with \`npm run db:schema\` (\`kiln gm commit\` also rewrites it);
-- test/db.schema.test.ts fails when this file is stale. Read it to review; migrations are the source.
-- Functions and views are listed here by name; each is defined in its own file under db/functions/
-- and db/views/, where a change is made (docs/development.md).
`;

/** The dump of `kiln` and `kiln_private` in the database `sql` is connected to. */
export async function dumpSchema(sql: Sql): Promise<string> {
  // With an empty search_path every name the catalog functions print is schema-qualified,
  // whatever the connection's settings.
  const parts = await sql.begin('isolation level repeatable read read only', async (tx) => {
    await tx`set local search_path = ''`;
    return [
      await extensions(tx),
      await schemas(tx),
      await types(tx),
      await tables(tx),
      await sequences(tx),
      await views(tx),
      await functions(tx),
      await unsupported(tx),
    ];
  });
  return [HEADER, ...parts.filter((p) => p)].join('\n');
}

/**
 * Migrates a scratch database on the server of `adminUrl` (a URL of any database there, used to
 * create and drop the scratch one) with the committed migrations only, and dumps it.
 */
export async function dumpCommittedSchema(adminUrl: string): Promise<string> {
  return await withScratchDatabase(adminUrl, {}, dumpSchema);
}

/**
 * Runs `fn` on a scratch database on the server of `adminUrl`, migrated with the committed
 * migrations (and the current one, with `includeCurrent`), then drops it.
 */
export async function withScratchDatabase<T>(adminUrl: string, opts: { includeCurrent?: boolean }, fn: (sql: Sql) => Promise<T>): Promise<T> {
  const name = `kiln_schema_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${name}`);
    try {
      await migrate(u.toString(), { includeCurrent: opts.includeCurrent });
      const sql = postgres(u.toString(), { max: 1, onnotice: () => {} });
      try {
        return await fn(sql);
      } finally {
        await sql.end();
      }
    } finally {
      await admin.unsafe(`drop database if exists ${name} with (force)`);
    }
  } finally {
    await admin.end();
  }
}

/** Writes `text` to db/schema.sql; true when the file changed. */
export function writeSchemaFile(text: string, file = SCHEMA_FILE): boolean {
  const before = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null;
  if (before === text) return false;
  fs.writeFileSync(file, text);
  return true;
}

type Tx = postgres.TransactionSql<{}>;

const literal = (s: string) => `'${s.replace(/'/g, "''")}'`;
const comment = (what: string, text: string | null) => (text == null ? '' : `comment on ${what} is ${literal(text)};\n`);
const section = (title: string, body: string[]) => (body.length ? `-- ${title}\n\n${body.join('\n')}` : '');

async function extensions(tx: Tx) {
  // Extensions live outside these schemas, but their functions (pgcrypto's) are used in them.
  const rows = await tx`
    select quote_ident(extname) as name from pg_extension where extname <> 'plpgsql' order by extname`;
  return section('Extensions', rows.map((r) => `create extension if not exists ${r.name};\n`));
}

async function schemas(tx: Tx) {
  const rows = await tx`
    select quote_ident(nspname) as name, obj_description(oid, 'pg_namespace') as comment
    from pg_namespace where nspname = any(${SCHEMAS}) order by nspname`;
  return section('Schemas', rows.map((r) => `create schema ${r.name};\n${comment(`schema ${r.name}`, r.comment)}`));
}

async function types(tx: Tx) {
  const rows = await tx`
    select t.oid, t.typtype, t.oid::regtype::text as name, obj_description(t.oid, 'pg_type') as comment,
      case t.typtype
        when 'c' then (
          select string_agg(format('  %I %s%s', a.attname, format_type(a.atttypid, a.atttypmod),
                   case when a.attcollation <> ty.typcollation then ' collate ' || a.attcollation::regcollation::text else '' end),
                 E',\n' order by a.attnum)
          from pg_attribute a join pg_type ty on ty.oid = a.atttypid
          where a.attrelid = t.typrelid and a.attnum > 0 and not a.attisdropped)
        when 'e' then (
          select string_agg('  ' || quote_literal(e.enumlabel), E',\n' order by e.enumsortorder)
          from pg_enum e where e.enumtypid = t.oid)
        when 'd' then format_type(t.typbasetype, t.typtypmod)
          || case when t.typnotnull then ' not null' else '' end
          || coalesce(' default ' || t.typdefault, '')
          || coalesce((select string_agg(E'\n  constraint ' || quote_ident(c.conname) || ' ' || pg_get_constraintdef(c.oid), '' order by c.conname)
                       from pg_constraint c where c.contypid = t.oid), '')
      end as body
    from pg_type t join pg_namespace n on n.oid = t.typnamespace
    where n.nspname = any(${SCHEMAS})
      and (t.typtype in ('e', 'd') or (t.typtype = 'c' and (select relkind from pg_class where oid = t.typrelid) = 'c'))
      and not exists (select 1 from pg_depend d where d.classid = 'pg_type'::regclass and d.objid = t.oid and d.deptype = 'e')
    order by n.nspname, t.typname`;
  return section(
    'Types',
    rows.map((r) => {
      const head =
        r.typtype === 'c' ? `create type ${r.name} as (\n${r.body ?? ''}\n);`
        : r.typtype === 'e' ? `create type ${r.name} as enum (\n${r.body ?? ''}\n);`
        : `create domain ${r.name} as ${r.body};`;
      return `${head}\n${comment(`type ${r.name}`, r.comment)}`;
    }),
  );
}

/** Tables (columns, constraints, then their indexes, triggers, policies and comments). */
async function tables(tx: Tx) {
  const rels = await tx`
    select c.oid, c.oid::regclass::text as name, c.relpersistence, c.relkind, c.reloptions,
      c.relrowsecurity, c.relforcerowsecurity, obj_description(c.oid, 'pg_class') as comment,
      case when c.relkind = 'p' then pg_get_partkeydef(c.oid) end as partkey,
      case when c.relispartition then (select i.inhparent::regclass::text from pg_inherits i where i.inhrelid = c.oid) end as parent,
      case when c.relispartition then pg_get_expr(c.relpartbound, c.oid) end as bound
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = any(${SCHEMAS}) and c.relkind in ('r', 'p')
      and not exists (select 1 from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype = 'e')
    order by n.nspname, c.relname`;
  const out: string[] = [];
  for (const t of rels) {
    const cols = await columns(tx, t.oid);
    const cons = await tx`
      select format('constraint %I %s', conname, pg_get_constraintdef(oid)) as def
      from pg_constraint
      where conrelid = ${t.oid} and contype <> 'n'
      order by array_position(array['p', 'u', 'x', 'f', 'c', 't']::"char"[], contype), conname`;
    const lines = [...cols.map((c) => c.def), ...cons.map((c) => c.def)];
    let text = `create ${t.relpersistence === 'u' ? 'unlogged ' : ''}table ${t.name} `;
    text += t.parent ? `partition of ${t.parent} ${t.bound}` : `(\n  ${lines.join(',\n  ')}\n)`;
    if (t.partkey) text += ` partition by ${t.partkey}`;
    if (t.reloptions) text += ` with (${t.reloptions.join(', ')})`;
    text += ';\n';
    if (t.relrowsecurity) text += `alter table ${t.name} enable row level security;\n`;
    if (t.relforcerowsecurity) text += `alter table ${t.name} force row level security;\n`;
    text += comment(`table ${t.name}`, t.comment);
    for (const c of cols) text += comment(`column ${t.name}.${c.ident}`, c.comment);
    for (const c of await constraintComments(tx, t.oid)) text += comment(`constraint ${c.ident} on ${t.name}`, c.comment);
    text += await indexes(tx, t.oid);
    const triggers = await tx`
      select pg_get_triggerdef(oid, true) as def, quote_ident(tgname) as ident, obj_description(oid, 'pg_trigger') as comment
      from pg_trigger where tgrelid = ${t.oid} and not tgisinternal order by tgname`;
    for (const g of triggers) text += `${g.def};\n${comment(`trigger ${g.ident} on ${t.name}`, g.comment)}`;
    const policies = await tx`
      select format('create policy %I on %s as %s for %s to %s', p.polname, ${t.name}::text,
               case when p.polpermissive then 'permissive' else 'restrictive' end,
               case p.polcmd when 'r' then 'select' when 'a' then 'insert' when 'w' then 'update' when 'd' then 'delete' else 'all' end,
               (select string_agg(case when r = 0 then 'public' else quote_ident(pg_get_userbyid(r)) end, ', ' order by 1)
                from unnest(p.polroles) r))
             || coalesce(' using (' || pg_get_expr(p.polqual, p.polrelid) || ')', '')
             || coalesce(' with check (' || pg_get_expr(p.polwithcheck, p.polrelid) || ')', '') as def
      from pg_policy p where p.polrelid = ${t.oid} order by p.polname`;
    for (const p of policies) text += `${p.def};\n`;
    out.push(text);
  }
  return section('Tables', out);
}

async function columns(tx: Tx, relid: number) {
  return await tx`
    select quote_ident(a.attname) as ident, col_description(a.attrelid, a.attnum) as comment,
      quote_ident(a.attname) || ' ' || format_type(a.atttypid, a.atttypmod)
        || case when a.attcollation <> t.typcollation then ' collate ' || a.attcollation::regcollation::text else '' end
        || case
             when a.attidentity = 'a' then ' generated always as identity'
             when a.attidentity = 'd' then ' generated by default as identity'
             when a.attgenerated = 's' then ' generated always as (' || pg_get_expr(d.adbin, d.adrelid) || ') stored'
             when a.attgenerated = 'v' then ' generated always as (' || pg_get_expr(d.adbin, d.adrelid) || ') virtual'
             when d.adbin is not null then ' default ' || pg_get_expr(d.adbin, d.adrelid)
             else '' end
        || case when a.attnotnull then ' not null' else '' end as def
    from pg_attribute a
    join pg_type t on t.oid = a.atttypid
    left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
    where a.attrelid = ${relid} and a.attnum > 0 and not a.attisdropped
    order by a.attnum`;
}

async function constraintComments(tx: Tx, relid: number) {
  return await tx`
    select quote_ident(conname) as ident, obj_description(oid, 'pg_constraint') as comment
    from pg_constraint where conrelid = ${relid} and obj_description(oid, 'pg_constraint') is not null
    order by conname`;
}

/** Indexes other than those behind a primary key, unique or exclusion constraint. */
async function indexes(tx: Tx, relid: number) {
  const rows = await tx`
    select pg_get_indexdef(i.indexrelid) as def, i.indexrelid::regclass::text as name,
      obj_description(i.indexrelid, 'pg_class') as comment
    from pg_index i join pg_class c on c.oid = i.indexrelid
    where i.indrelid = ${relid}
      and not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid and k.contype in ('p', 'u', 'x'))
    order by c.relname`;
  return rows.map((r) => `${r.def};\n${comment(`index ${r.name}`, r.comment)}`).join('');
}

/** Sequences not owned by an identity column. */
async function sequences(tx: Tx) {
  const rows = await tx`
    select c.oid::regclass::text as name, format_type(s.seqtypid, null) as type, s.seqstart, s.seqincrement,
      s.seqmin, s.seqmax, s.seqcache, s.seqcycle, obj_description(c.oid, 'pg_class') as comment,
      (select format('%s.%I', d.refobjid::regclass::text, a.attname)
       from pg_depend d join pg_attribute a on a.attrelid = d.refobjid and a.attnum = d.refobjsubid
       where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype = 'a') as owned_by
    from pg_class c join pg_namespace n on n.oid = c.relnamespace join pg_sequence s on s.seqrelid = c.oid
    where n.nspname = any(${SCHEMAS}) and c.relkind = 'S'
      and not exists (select 1 from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype in ('i', 'e'))
    order by n.nspname, c.relname`;
  return section(
    'Sequences',
    rows.map(
      (r) =>
        `create sequence ${r.name} as ${r.type} increment ${r.seqincrement} minvalue ${r.seqmin} maxvalue ${r.seqmax}` +
        ` start ${r.seqstart} cache ${r.seqcache}${r.seqcycle ? ' cycle' : ''}${r.owned_by ? ` owned by ${r.owned_by}` : ''};\n` +
        comment(`sequence ${r.name}`, r.comment),
    ),
  );
}

/** Views by name, each pointing at its file (db/views/, src/db/definitions.ts), which holds its definition. */
async function views(tx: Tx) {
  const rels = await tx`
    select c.oid, c.oid::regclass::text as name, n.nspname as schema, c.relname, c.relkind
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = any(${SCHEMAS}) and c.relkind in ('v', 'm')
      and not exists (select 1 from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype = 'e')
    order by n.nspname, c.relname`;
  const out: string[] = [];
  for (const v of rels) {
    let text = `-- ${v.relkind === 'm' ? 'materialized view' : 'view'} ${v.name}: db/views/${v.schema}.${v.relname}.sql\n`;
    if (v.relkind === 'm') text += await indexes(tx, v.oid);
    out.push(text);
  }
  return out.length ? `-- Views (each defined in its own file)\n\n${out.join('')}` : '';
}

/** Functions and procedures by name then argument types, each pointing at its file (db/functions/). */
async function functions(tx: Tx) {
  const rows = await tx`
    select p.oid::regprocedure::text as signature, n.nspname as schema, p.proname as name, p.prokind
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = any(${SCHEMAS}) and p.prokind in ('f', 'p', 'w')
      and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
    order by n.nspname, p.proname, pg_get_function_identity_arguments(p.oid)`;
  const lines = rows.map((r) => `-- ${r.prokind === 'p' ? 'procedure' : 'function'} ${r.signature}: db/functions/${r.schema}.${r.name}.sql\n`);
  return lines.length ? `-- Functions (each defined in its own file)\n\n${lines.join('')}` : '';
}

/**
 * Objects of kinds this dump does not render (aggregates, range types, foreign tables, …) are
 * listed by name, so adding one still changes the file instead of passing unseen.
 */
async function unsupported(tx: Tx) {
  const rows = await tx`
    select 'aggregate ' || p.oid::regprocedure::text as what
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = any(${SCHEMAS}) and p.prokind = 'a'
    union all
    select 'type ' || t.oid::regtype::text || ' (typtype ' || t.typtype::text || ')'
    from pg_type t join pg_namespace n on n.oid = t.typnamespace
    where n.nspname = any(${SCHEMAS}) and (t.typtype in ('r', 'm', 'p') or (t.typtype = 'b' and t.typcategory <> 'A'))
    union all
    select 'relation ' || c.oid::regclass::text || ' (relkind ' || c.relkind::text || ')'
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = any(${SCHEMAS}) and c.relkind not in ('r', 'p', 'v', 'm', 'i', 'I', 'S', 'c', 't')
    union all
    select 'operator ' || o.oid::regoperator::text
    from pg_operator o join pg_namespace n on n.oid = o.oprnamespace where n.nspname = any(${SCHEMAS})
    union all
    select 'rule ' || quote_ident(r.rulename) || ' on ' || r.ev_class::regclass::text
    from pg_rewrite r join pg_class c on c.oid = r.ev_class join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = any(${SCHEMAS}) and r.rulename <> '_RETURN'
    order by 1`;
  return section(
    'Not rendered by src/db/schema-dump.ts (extend it)',
    rows.map((r) => `-- ${r.what}\n`),
  );
}
