-- functions/kiln.purge_audit_log.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.purge_audit_log.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.purge_audit_log(p_limit integer DEFAULT 10000)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_retention interval;
  v_n int;
begin
  if p_limit is null or p_limit < 1 then
    raise exception 'purge_audit_log needs a positive limit' using errcode = 'KI001';
  end if;
  select retention into v_retention from kiln_private.audit_policy;
  if v_retention is null then
    return 0; -- kept forever
  end if;
  perform set_config('kiln.audit_purge', 'on', true);
  delete from kiln_private.audit_log where id in (
    select id from kiln_private.audit_log where at < now() - v_retention order by at limit p_limit);
  get diagnostics v_n = row_count;
  perform set_config('kiln.audit_purge', 'off', true);
  return v_n;
end;
$function$;
comment on function kiln.purge_audit_log(integer) is 'The retention purge (housekeeping): deletes up to p_limit entries older than the owner''s retention (kiln_private.audit_policy), oldest first, and nothing when none is set. The only delete the append-only trigger lets through; the caller cannot choose what is old.';
