-- functions/kiln.ensure_secret.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.ensure_secret.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.ensure_secret(p_name text, p_candidate bytea)
 RETURNS bytea
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_value bytea;
begin
  insert into kiln_private.secrets (name, value) values (p_name, p_candidate)
    on conflict (name) do nothing;
  select value into v_value from kiln_private.secrets where name = p_name;
  return v_value;
end;
$function$;
comment on function kiln.ensure_secret(text,bytea) is 'Returns the named secret, storing the candidate first when none exists (the first process to ask wins).';
