--! Previous: sha1:1adf8c50762887942aa7ff91bba545a17ddd90ce
--! Hash: sha1:dd61afe9d4112ba935a226145cc31510ac0da69a
--! Message: GET /audit reads its scope by equality, through the index

--! split: 1-current.sql
-- GET /audit reads the scope's entries through audit_log_scope_idx: an equality (IS NOT DISTINCT FROM
-- cannot use an index, so the page walked the whole log newest first). A null scope lists nothing.

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
