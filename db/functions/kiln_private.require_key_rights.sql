-- functions/kiln_private.require_key_rights.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.require_key_rights.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.require_key_rights(p_caller_scopes text[], p_scopes text[])
 RETURNS void
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_extra text[];
begin
  select array_agg(s order by s) into v_extra from unnest(p_scopes) s where not (s = any (coalesce(p_caller_scopes, '{}')));
  if v_extra is not null then
    raise exception 'This key has scopes the caller lacks (%): only a credential holding every scope of a key may read, rotate or revoke it.',
      array_to_string(v_extra, ', ') using errcode = 'KF002';
  end if;
end;
$function$;
comment on function kiln_private.require_key_rights(text[],text[]) is 'Raises KF002 (403 forbidden) unless the caller''s scopes hold every scope of the key (p_scopes). Unknown caller scopes (null) hold none.';
