-- functions/kiln.list_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_generations(p_account_id uuid, p_workspace_id uuid, p_origin text, p_limit integer, p_before_at timestamp with time zone, p_before_id uuid, p_statuses text[], p_types text[], p_model_id text, p_since timestamp with time zone, p_end_user text DEFAULT NULL::text, p_metadata jsonb DEFAULT NULL::jsonb)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
declare
  v_pool uuid := coalesce(p_workspace_id, p_account_id);
  v_limit int := least(greatest(coalesce(p_limit, 20), 1), 100);
  v_at timestamptz := coalesce(p_before_at, 'infinity');
  v_id uuid := coalesce(p_before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
  v_since timestamptz := coalesce(p_since, '-infinity');
  v_statuses text[] := coalesce(p_statuses, array['pending', 'processing', 'completed', 'failed']);
  v_types text[] := coalesce(p_types, array['image', 'code']);
  v_ids uuid[];
  v_next json;
  v_data json;
  v_key text;
  v_value text;
begin
  if p_end_user is not null then
    -- One end user's: generations_end_user_list_idx, a keyset probe per (type, status).
    select array_agg(h.id order by h.created_at desc, h.id desc) into v_ids
    from (select h.created_at, h.id
          from unnest(v_types) t(type) cross join unnest(v_statuses) s(status)
          cross join lateral (
            select g.created_at, g.id from kiln_private.generations g
            where g.account_id = p_account_id and coalesce(g.workspace_id, g.account_id) = v_pool
              and g.origin = p_origin and g.end_user = p_end_user and g.type = t.type and g.status = s.status
              and (g.created_at, g.id) < (v_at, v_id) and g.created_at >= v_since
              and (p_model_id is null or g.model_id = p_model_id)
              and (p_metadata is null or g.metadata @> p_metadata)
            order by g.created_at desc, g.id desc
            limit v_limit + 1) h
          order by h.created_at desc, h.id desc
          limit v_limit + 1) h;
  elsif p_metadata is not null then
    -- Tagged ones: one of the pairs through generation_tags_list_idx in keyset order (a page reads
    -- about a page of it), the other pairs and filters on the row.
    select t.key, t.value into v_key, v_value from jsonb_each_text(p_metadata) t order by t.key limit 1;
    select array_agg(h.id order by h.created_at desc, h.id desc) into v_ids
    from (select t.created_at, t.generation_id as id
          from kiln_private.generation_tags t
          join kiln_private.generations g on g.id = t.generation_id
          where t.account_id = p_account_id and t.pool_id = v_pool and t.origin = p_origin
            and t.mkey = v_key and t.mvalue = v_value
            and (t.created_at, t.generation_id) < (v_at, v_id) and t.created_at >= v_since
            and g.metadata @> p_metadata
            and g.type = any (v_types) and g.status = any (v_statuses)
            and (p_model_id is null or g.model_id = p_model_id)
          order by t.created_at desc, t.generation_id desc
          limit v_limit + 1) h;
  elsif p_model_id is null then
    select array_agg(h.id order by h.created_at desc, h.id desc) into v_ids
    from (select h.created_at, h.id
          from unnest(v_types) t(type) cross join unnest(v_statuses) s(status)
          cross join lateral (
            select g.created_at, g.id from kiln_private.generations g
            where g.account_id = p_account_id and coalesce(g.workspace_id, g.account_id) = v_pool
              and g.origin = p_origin and g.type = t.type and g.status = s.status
              and (g.created_at, g.id) < (v_at, v_id) and g.created_at >= v_since
            order by g.created_at desc, g.id desc
            limit v_limit + 1) h
          order by h.created_at desc, h.id desc
          limit v_limit + 1) h;
  else
    select array_agg(h.id order by h.created_at desc, h.id desc) into v_ids
    from (select h.created_at, h.id
          from unnest(v_types) t(type) cross join unnest(v_statuses) s(status)
          cross join lateral (
            select g.created_at, g.id from kiln_private.generations g
            where g.account_id = p_account_id and coalesce(g.workspace_id, g.account_id) = v_pool
              and g.origin = p_origin and g.model_id = p_model_id and g.type = t.type and g.status = s.status
              and (g.created_at, g.id) < (v_at, v_id) and g.created_at >= v_since
            order by g.created_at desc, g.id desc
            limit v_limit + 1) h
          order by h.created_at desc, h.id desc
          limit v_limit + 1) h;
  end if;
  v_ids := coalesce(v_ids, '{}');
  select coalesce(json_agg(kiln_private.generation_body(g) order by g.created_at desc, g.id desc), '[]'),
         -- More than a page: the last item of the page is where the next one starts.
         case when cardinality(v_ids) > v_limit then
           (select json_build_object('at', (extract(epoch from l.created_at) * 1000000)::bigint::text, 'id', l.id)
            from kiln_private.generations l where l.id = v_ids[v_limit]) end
    into v_data, v_next
    from kiln_private.generations g
    where g.id = any (v_ids[1:v_limit]);
  return json_build_object('data', v_data, 'next', v_next);
end;
$function$;
comment on function kiln.list_generations(uuid,uuid,text,integer,timestamp with time zone,uuid,text[],text[],text,timestamp with time zone,text,jsonb) is 'A page of an account''s generations in one billing scope (p_workspace_id null = the personal budget) created through p_origin, newest first, before (p_before_at, p_before_id) (keyset), filtered by statuses, types, model, created at or after p_since, end user (p_end_user) and metadata containing every pair of p_metadata (null = any): {data: [kiln_private.generation_body], next: {at: epoch microseconds, id} | null}. At most 2 × 4 index probes of a page each.';
