--! Previous: sha1:d21da82826b2ad695e91e024e5ad7c50515e5a85
--! Hash: sha1:81c7c09d638b902d7f75b1ed398303eb1f58b4d8
--! Message: A canceled generation is counted under its model

--! split: 1-current.sql
-- A canceled generation is counted in kiln_generations_total under its model: the cancel's answer
-- carries the generation's model_id beside its body (the body, which clients read, is unchanged).

create or replace function kiln.cancel_generation(p_account_id uuid, p_id uuid, p_origins text[])
returns json
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_gen kiln_private.generations;
begin
  select * into v_gen from kiln_private.generations
    where id = p_id and account_id = p_account_id and origin = any (p_origins);
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  if v_gen.run_id is not null then
    -- The lock order of every settlement: the run, then the generation.
    perform 1 from kiln_private.workflow_runs where id = v_gen.run_id for update;
  end if;
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if v_gen.status in ('completed', 'failed') then
    return json_build_object('outcome', 'conflict', 'body', kiln_private.generation_body(v_gen));
  end if;
  perform kiln_private.cancel_generation(p_id);
  select * into v_gen from kiln_private.generations where id = p_id;
  return json_build_object('outcome', 'canceled', 'body', kiln_private.generation_body(v_gen), 'model_id', v_gen.model_id);
end;
$$;
comment on function kiln.cancel_generation(uuid,uuid,text[]) is 'Cancels a generation of the account created through one of p_origins: outcome canceled (failed with error ''canceled'', reservation released, its worker told to abort; with its model_id, for the canceling process''s metrics), conflict (already completed or failed) or missing; body = the generation as the API reads it. Never raises for these outcomes (safe in a batch).';

drop function if exists kiln.cancel_generations_for_keys(bytea[], integer, uuid[], text);
create function kiln.cancel_generations_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_ids uuid[], p_origin text)
returns table(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, outcome text, body json, model_id text)
language sql volatile security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
  select a.ord, a.status, a.key_id, a.account_id, a.workspace_id, a.tier, a.scopes, a.retry_after, c->>'outcome', c->'body', c->>'model_id'
  from kiln_private.authorize_controls(p_key_hashes, p_read_rpm) a
  left join lateral (
    select kiln.cancel_generation(a.account_id, p_ids[a.ord], array[p_origin]) as c where a.status = 'ok'
  ) x on true
  order by a.ord;
$$;
comment on function kiln.cancel_generations_for_keys(bytea[],integer,uuid[],text) is 'POST /generations/{id}/cancel for a batch in one transaction: authorizes each key (write scope, the per-key read bucket, the key''s own rpm) and, when admitted, cancels that generation of the key''s account created through p_origin (kiln.cancel_generation; outcome null when not admitted; model_id of a canceled one).';
