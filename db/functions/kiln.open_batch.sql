-- functions/kiln.open_batch.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.open_batch.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.open_batch(p_account_id uuid, p_workspace_id uuid, p_key_id uuid, p_total integer, p_idem_key text DEFAULT NULL::text, p_fingerprint bytea DEFAULT NULL::bytea, p_idem_ttl_seconds integer DEFAULT 86400, p_expires_seconds integer DEFAULT 86400)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id uuid := kiln_private.uuid_v7();
  v_claim record;
  v_b kiln_private.batches;
  v_require boolean;
begin
  if p_total is null or p_total < 1 or p_total > 50000 then
    raise exception 'a batch has 1 to 50000 lines' using errcode = '22023';
  end if;
  v_require := exists (select 1 from kiln_private.api_keys k where k.id = p_key_id and k.require_end_user);
  if p_idem_key is not null then
    select * into v_claim from kiln_private.claim_idempotency_keys(array[p_account_id], array['POST /batches'], array[p_idem_key],
      array[p_fingerprint], array[202], array[jsonb_build_object('id', v_id)], p_idem_ttl_seconds);
    if v_claim.outcome = 'conflict' then
      return json_build_object('outcome', 'conflict', 'require_end_user', v_require);
    elsif v_claim.outcome = 'pending' then
      return json_build_object('outcome', 'pending', 'require_end_user', v_require);
    elsif v_claim.outcome in ('replay', 'follower') then
      select * into v_b from kiln_private.batches where id = (v_claim.response_body->>'id')::uuid;
      return json_build_object('outcome', 'replayed', 'require_end_user', v_require, 'batch', kiln_private.batch_body(v_b));
    end if;
  end if;
  -- No line is queued before kiln.close_batch (the same transaction): nothing runs before every
  -- line is in, and a failure on the way leaves nothing.
  insert into kiln_private.batches (id, account_id, workspace_id, key_id, scope_id, total, expires_at, models)
    values (v_id, p_account_id, p_workspace_id, p_key_id, coalesce(p_workspace_id, p_account_id), p_total,
            now() + make_interval(secs => p_expires_seconds), '{}'::jsonb);
  return json_build_object('outcome', 'opened', 'id', v_id, 'require_end_user', v_require);
end;
$function$;
comment on function kiln.open_batch(uuid,uuid,uuid,integer,text,bytea,integer,integer) is 'POST /batches, in one transaction with kiln.add_batch_lines and kiln.close_batch: claims the Idempotency-Key (outcome replayed with the stored batch, conflict or pending) or inserts the batch row of p_total lines (outcome opened, with its id); require_end_user says whether the key was made with requireEndUser (every line must then name an endUser).';
