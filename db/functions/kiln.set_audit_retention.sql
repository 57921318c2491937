-- functions/kiln.set_audit_retention.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.set_audit_retention.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.set_audit_retention(p_retention interval)
 RETURNS interval
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if p_retention is not null and p_retention <= interval '0' then
    raise exception 'the retention must be positive, or null to keep every entry' using errcode = 'KI001';
  end if;
  insert into kiln_private.audit_policy (only_row, retention, set_at) values (true, p_retention, now())
    on conflict (only_row) do update set retention = excluded.retention, set_at = excluded.set_at
    where kiln_private.audit_policy.retention is distinct from excluded.retention;
  return p_retention;
end;
$function$;
comment on function kiln.set_audit_retention(interval) is 'The owner''s: sets how long the audit log keeps entries (null = forever). `kiln migrate` calls it with KILN_AUDIT_RETENTION. Invoker rights and no grant: only the owner (or a superuser) can run it.';
