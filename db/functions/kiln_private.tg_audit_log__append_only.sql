-- functions/kiln_private.tg_audit_log__append_only.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_audit_log__append_only.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_audit_log__append_only()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if tg_op = 'DELETE' and current_setting('kiln.audit_purge', true) = 'on' then
    return old;
  end if;
  raise exception 'the audit log is append-only' using errcode = 'KF001';
end;
$function$;
comment on function kiln_private.tg_audit_log__append_only() is 'Trigger: refuses UPDATE, DELETE and TRUNCATE of the audit log, except the retention purge''s deletes (kiln.purge_audit_log).';
