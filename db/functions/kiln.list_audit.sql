-- functions/kiln.list_audit.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_audit.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_audit(p_scope_id uuid, p_limit integer, p_before uuid, p_action text)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  with page as (
    select l, l.id from kiln_private.audit_log l
    where l.scope_id = p_scope_id
      and (p_before is null or l.id < p_before)
      and (p_action is null or l.action = p_action)
    order by l.id desc
    limit p_limit + 1)
  select json_build_object(
    'data', coalesce((select json_agg(kiln_private.audit_json(p.l) order by p.id desc)
                      from (select * from page order by id desc limit p_limit) p), '[]'),
    'nextCursor', case when (select count(*) from page) > p_limit
                       then (select id from page order by id desc offset p_limit - 1 limit 1) end);
$function$;
comment on function kiln.list_audit(uuid,integer,uuid,text) is 'A page of a billing scope''s audit entries, newest first (p_before = the previous page''s nextCursor), optionally of one action.';
