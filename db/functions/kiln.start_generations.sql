-- functions/kiln.start_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.start_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.start_generations(p_key_hashes bytea[], p_origin text, p_types text[], p_model_ids text[], p_model_versions bigint[], p_requests jsonb[], p_reserves bigint[], p_max_attempts integer, p_idem_keys text[] DEFAULT NULL::text[], p_fingerprints bytea[] DEFAULT NULL::bytea[], p_idem_ttl_seconds integer DEFAULT 86400)
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, retry_after integer, id uuid, error_code text, error_message text, replayed boolean)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
#variable_conflict use_column
declare
  v_n int := coalesce(cardinality(p_key_hashes), 0);
  a_status text[];
  a_key uuid[];
  a_account uuid[];
  a_workspace uuid[];
  a_retry int[];
  v_idx int[];
begin
  if v_n = 0 then
    return;
  end if;
  if v_n > 50 then
    raise exception 'at most 50 generations per call' using errcode = '22023';
  end if;
  -- 1. Key, write scope and the key's own rpm (generation starts have no endpoint bucket).
  select array_agg(r.status order by r.ord), array_agg(r.key_id order by r.ord), array_agg(r.account_id order by r.ord),
         array_agg(r.workspace_id order by r.ord), array_agg(r.retry_after order by r.ord)
    into a_status, a_key, a_account, a_workspace, a_retry
    from kiln.authorize_requests(p_key_hashes, array_fill('write'::text, array[v_n]), array_fill(null::text, array[v_n]),
                                 array_fill(null::int, array[v_n]), array_fill(false, array[v_n])) r;
  -- 2. The admitted requests, through the generation primitive (a refused key claims nothing).
  select array_agg(s.i order by s.i) into v_idx from generate_subscripts(p_key_hashes, 1) as s(i) where a_status[s.i] = 'ok';
  return query
    with g as (
      select * from kiln_private.insert_generations(
        array(select a_account[i] from unnest(v_idx) as u(i)),
        array(select a_key[i] from unnest(v_idx) as u(i)),
        array(select a_workspace[i] from unnest(v_idx) as u(i)),
        array_fill(p_origin, array[coalesce(cardinality(v_idx), 0)]),
        array(select p_types[i] from unnest(v_idx) as u(i)),
        array(select p_model_ids[i] from unnest(v_idx) as u(i)),
        array(select p_model_versions[i] from unnest(v_idx) as u(i)),
        array(select p_requests[i] from unnest(v_idx) as u(i)),
        array(select p_reserves[i] from unnest(v_idx) as u(i)),
        p_max_attempts,
        case when p_idem_keys is not null then array(select p_idem_keys[i] from unnest(v_idx) as u(i)) end,
        case when p_idem_keys is not null then array(select p_fingerprints[i] from unnest(v_idx) as u(i)) end,
        p_idem_ttl_seconds)
    )
    select s.i::int, a_status[s.i], a_key[s.i], a_account[s.i], a_workspace[s.i], a_retry[s.i], g.id, g.error_code, g.error_message,
           coalesce(g.replayed, false)
    from generate_subscripts(p_key_hashes, 1) as s(i)
    left join g on v_idx[g.ord] = s.i
    order by s.i;
end;
$function$;
comment on function kiln.start_generations(bytea[],text,text[],text[],bigint[],jsonb[],bigint[],integer,text[],bytea[],integer) is 'POST /generations for up to 50 requests in one transaction: authenticates each key (write scope, the key''s own rpm), then starts the admitted ones through kiln_private.insert_generations, with their Idempotency-Keys (null: none) kept p_idem_ttl_seconds. Each row carries its authorization status and either the new id (replayed: the stored id of an earlier request with that key and body) or its own business error (KI001, KQ001, KP001, KS001, KD001, KD002); the others still commit.';
