-- functions/kiln.add_batch_lines.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.add_batch_lines.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.add_batch_lines(p_batch_id uuid, p_account_id uuid, p_origin text, p_max_attempts integer, p_first_line integer, p_custom_ids text[], p_types text[], p_model_ids text[], p_requests jsonb, p_reserves bigint[], p_models jsonb DEFAULT NULL::jsonb)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_b kiln_private.batches;
  v_n int := coalesce(cardinality(p_custom_ids), 0);
begin
  select * into v_b from kiln_private.batches where id = p_batch_id and account_id = p_account_id for update;
  if not found or v_b.status <> 'in_progress' or v_b.next_line <> 0 then
    raise exception 'not a batch being created' using errcode = '22023';
  end if;
  if cardinality(p_types) <> v_n or cardinality(p_model_ids) <> v_n or jsonb_array_length(p_requests) <> v_n or cardinality(p_reserves) <> v_n then
    raise exception 'one type, model, request and reservation per line' using errcode = '22023';
  end if;
  if p_first_line < 1 or p_first_line + v_n - 1 > v_b.total then
    raise exception 'lines % to % are outside the batch''s % lines', p_first_line, p_first_line + v_n - 1, v_b.total using errcode = '22023';
  end if;
  if p_models is not null and p_models <> '{}'::jsonb then
    update kiln_private.batches set models = coalesce(models, '{}'::jsonb) || p_models where id = p_batch_id;
  end if;
  -- Set-based: no reservation and no job yet (each line reserves when it starts).
  insert into kiln_private.generations
    (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, charge_id, max_attempts, batch_id, batch_line, custom_id,
     end_user, metadata)
  select kiln_private.uuid_v7(), v_b.account_id, v_b.key_id, v_b.workspace_id, p_origin, u.m, u.t, r.r, u.res, null, p_max_attempts, p_batch_id,
         p_first_line + u.i::int - 1, u.c, r.r->>'endUser', nullif(r.r->'metadata', 'null'::jsonb)
  from unnest(p_custom_ids, p_types, p_model_ids, p_reserves) with ordinality as u(c, t, m, res, i)
  join jsonb_array_elements(p_requests) with ordinality as r(r, i) on r.i = u.i;
  return v_n;
end;
$function$;
comment on function kiln.add_batch_lines(uuid,uuid,text,integer,integer,text[],text[],text[],jsonb,bigint[],jsonb) is 'POST /batches: appends a chunk of validated lines (from line p_first_line) to a batch kiln.open_batch opened in this transaction, as pending generations (no reservation, no job). p_requests is a JSON array of the stored requests, each naming its model and fallbacks by a key of the batch''s models (p_models adds entries to it: each catalog entry is stored once per batch, not once per line).';
