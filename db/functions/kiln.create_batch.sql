-- functions/kiln.create_batch.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.create_batch.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.create_batch(p_account_id uuid, p_workspace_id uuid, p_key_id uuid, p_origin text, p_custom_ids text[], p_types text[], p_model_ids text[], p_requests jsonb[], p_reserves bigint[], p_max_attempts integer, p_idem_key text DEFAULT NULL::text, p_fingerprint bytea DEFAULT NULL::bytea, p_idem_ttl_seconds integer DEFAULT 86400, p_expires_seconds integer DEFAULT 86400)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id uuid := kiln_private.uuid_v7();
  v_n int := coalesce(cardinality(p_custom_ids), 0);
  v_claim record;
  v_b kiln_private.batches;
  v_missing int[];
begin
  if v_n < 1 or v_n > 50000 then
    raise exception 'a batch has 1 to 50000 lines' using errcode = '22023';
  end if;
  if cardinality(p_types) <> v_n or cardinality(p_model_ids) <> v_n or cardinality(p_requests) <> v_n or cardinality(p_reserves) <> v_n then
    raise exception 'one type, model, request and reservation per line' using errcode = '22023';
  end if;
  -- A key made with requireEndUser: every line names its end user, or nothing is created.
  if exists (select 1 from kiln_private.api_keys k where k.id = p_key_id and k.require_end_user) then
    select array_agg(u.i order by u.i) into v_missing
      from unnest(p_requests) with ordinality as u(r, i) where u.r->>'endUser' is null;
    if v_missing is not null then
      return json_build_object('outcome', 'end_user_required', 'lines', v_missing);
    end if;
  end if;
  if p_idem_key is not null then
    select * into v_claim from kiln_private.claim_idempotency_keys(array[p_account_id], array['POST /batches'], array[p_idem_key],
      array[p_fingerprint], array[202], array[jsonb_build_object('id', v_id)], p_idem_ttl_seconds);
    if v_claim.outcome = 'conflict' then
      return json_build_object('outcome', 'conflict');
    elsif v_claim.outcome = 'pending' then
      return json_build_object('outcome', 'pending');
    elsif v_claim.outcome in ('replay', 'follower') then
      select * into v_b from kiln_private.batches where id = (v_claim.response_body->>'id')::uuid;
      return json_build_object('outcome', 'replayed', 'batch', kiln_private.batch_body(v_b));
    end if;
  end if;

  insert into kiln_private.batches (id, account_id, workspace_id, key_id, scope_id, total, expires_at)
    values (v_id, p_account_id, p_workspace_id, p_key_id, coalesce(p_workspace_id, p_account_id), v_n,
            now() + make_interval(secs => p_expires_seconds));
  -- Set-based: no reservation and no job yet (each line reserves when it starts).
  insert into kiln_private.generations
    (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, charge_id, max_attempts, batch_id, batch_line, custom_id,
     end_user, metadata)
  select kiln_private.uuid_v7(), p_account_id, p_key_id, p_workspace_id, p_origin, u.m, u.t, u.r, u.res, null, p_max_attempts, v_id, u.i, u.c,
         u.r->>'endUser', nullif(u.r->'metadata', 'null'::jsonb)
  from unnest(p_custom_ids, p_types, p_model_ids, p_requests, p_reserves) with ordinality as u(c, t, m, r, res, i);
  perform kiln_private.dispatch_batches(least(v_n, 1000));
  select * into v_b from kiln_private.batches where id = v_id;
  return json_build_object('outcome', 'created', 'batch', kiln_private.batch_body(v_b));
end;
$function$;
comment on function kiln.create_batch(uuid,uuid,uuid,text,text[],text[],text[],jsonb[],bigint[],integer,text,bytea,integer,integer) is 'POST /batches after every line passed validation: the batch and one pending generation per line (batch_line from 1, custom_id; reserved_micros its worst case, reserved only when it starts), in one transaction, then queues the first lines (kiln_private.dispatch_batches). Each line keeps its request''s attribution (endUser, metadata); a key made with requireEndUser gets outcome end_user_required with the lines (1-based) that lack an endUser, and nothing is created. With an Idempotency-Key: outcome replayed with the stored batch, conflict (another body) or pending (still in flight); else created.';
