-- functions/kiln.list_batch_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_batch_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_batch_generations(p_account_id uuid, p_batch_id uuid, p_limit integer, p_before_at timestamp with time zone, p_before_id uuid, p_statuses text[], p_types text[], p_model_id text, p_since timestamp with time zone, p_end_user text DEFAULT NULL::text, p_metadata jsonb DEFAULT NULL::jsonb)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_limit int := least(greatest(coalesce(p_limit, 20), 1), 100);
  v_at timestamptz := coalesce(p_before_at, 'infinity');
  v_id uuid := coalesce(p_before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
  v_line int;
  v_ids uuid[];
  v_next json;
  v_data json;
begin
  -- Only the account's own batch: another account's id lists nothing.
  if not exists (select 1 from kiln_private.batches b where b.id = p_batch_id and b.account_id = p_account_id) then
    return json_build_object('data', '[]'::json, 'next', null);
  end if;
  -- Newest first is last line first (a batch's lines share their created_at); the cursor's id
  -- names the line to go on after.
  if p_before_id is not null then
    select g.batch_line into v_line from kiln_private.generations g where g.id = p_before_id and g.batch_id = p_batch_id;
  end if;
  v_line := coalesce(v_line, 2147483647);
  select array_agg(h.id order by h.created_at desc, h.batch_line desc) into v_ids
  from (select g.created_at, g.batch_line, g.id from kiln_private.generations g
        where g.batch_id = p_batch_id and (g.created_at, g.batch_line) < (v_at, v_line)
          and (p_statuses is null or g.status = any (p_statuses))
          and (p_types is null or g.type = any (p_types))
          and (p_model_id is null or g.model_id = p_model_id)
          and (p_since is null or g.created_at >= p_since)
          and (p_end_user is null or g.end_user = p_end_user)
          and (p_metadata is null or g.metadata @> p_metadata)
        order by g.created_at desc, g.batch_line desc
        limit v_limit + 1) h;
  v_ids := coalesce(v_ids, '{}');
  select coalesce(json_agg(kiln_private.generation_body(g) order by g.created_at desc, g.batch_line desc), '[]'),
         case when cardinality(v_ids) > v_limit then
           (select json_build_object('at', (extract(epoch from l.created_at) * 1000000)::bigint::text, 'id', l.id)
            from kiln_private.generations l where l.id = v_ids[v_limit]) end
    into v_data, v_next
    from kiln_private.generations g
    where g.id = any (v_ids[1:v_limit]);
  return json_build_object('data', v_data, 'next', v_next);
end;
$function$;
comment on function kiln.list_batch_generations(uuid,uuid,integer,timestamp with time zone,uuid,text[],text[],text,timestamp with time zone,text,jsonb) is 'GET /generations?batchId=: a page of the lines of the account''s batch, last line first (keyset on created_at and the cursor''s line), with GET /generations'' other filters (end user and metadata included): {data: [kiln_private.generation_body], next}.';
