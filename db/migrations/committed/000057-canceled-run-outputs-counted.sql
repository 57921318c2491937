--! Previous: sha1:81c7c09d638b902d7f75b1ed398303eb1f58b4d8
--! Hash: sha1:979dffdd5d1cfc91c052b68fd3ce8ab362c7ce69
--! Message: A canceled run's outputs are counted by the process that served the cancel

--! split: 1-current.sql
-- A canceled run's outputs are counted in kiln_generations_total by the process that served the
-- cancel: its answer lists the generations it settled, each with its type, model and how it
-- ended — `canceled` for an output in flight (its call aborted), `failed` for one not started
-- (abandoned). The run body clients read is unchanged.

create or replace function kiln.cancel_workflow_run(p_account_id uuid, p_workflow_id uuid, p_run_id uuid)
returns json
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_run kiln_private.workflow_runs;
  v_out record;
  v_settled json;
begin
  select * into v_run from kiln_private.workflow_runs
    where id = p_run_id and account_id = p_account_id and workflow_id = p_workflow_id
    for update;
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  if v_run.status in ('completed', 'failed') then
    return json_build_object('outcome', 'conflict', 'status', v_run.status);
  end if;
  -- What this cancel settles, read under the run's lock (every settlement takes it first): the
  -- generations of outputs not started (abandoned below: failed) and of outputs in flight
  -- (canceled below).
  select coalesce(json_agg(json_build_object('type', g.type, 'model_id', g.model_id,
           'status', case when o.status = 'running' then 'canceled' else 'failed' end) order by o.ordinal), '[]'::json)
    into v_settled
    from kiln_private.workflow_run_outputs o
    join kiln_private.generations g on g.id = o.generation_id
    where o.run_id = p_run_id and o.status in ('waiting', 'queued', 'running') and g.status not in ('completed', 'failed');
  -- The run fails with 'canceled' first (outputs not started are abandoned, nothing charged) ...
  perform kiln_private.fail_workflow_run(p_run_id, 'canceled');
  -- ... then each output in flight is canceled like a generation: failed 'canceled', released,
  -- its provider call aborted. Completed outputs keep their results and charges.
  for v_out in
    select o.generation_id from kiln_private.workflow_run_outputs o
      where o.run_id = p_run_id and o.status in ('queued', 'running') and o.generation_id is not null
      order by o.ordinal
  loop
    perform kiln_private.cancel_generation(v_out.generation_id);
  end loop;
  return json_build_object('outcome', 'canceled', 'run', kiln.get_workflow_run(p_account_id, p_workflow_id, p_run_id), 'settled', v_settled);
end;
$$;
comment on function kiln.cancel_workflow_run(uuid,uuid,uuid) is 'Cancels a pending or running run of the account''s workflow: the run fails with error ''canceled'', outputs not started are abandoned, outputs in flight are canceled (kiln_private.cancel_generation: released, their workers told to abort), completed ones stay. Outcome canceled (with the run as kiln.get_workflow_run reads it, and settled: the generations it ended, each {type, model_id, status canceled|failed}, for the canceling process''s metrics), conflict (already completed or failed) or missing. Never raises for these outcomes.';

drop function if exists kiln.cancel_workflow_runs_for_keys(bytea[], integer, uuid[], uuid[]);
create function kiln.cancel_workflow_runs_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_workflow_ids uuid[], p_run_ids uuid[])
returns table(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, outcome text, body json, settled json)
language sql volatile security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
  select a.ord, a.status, a.key_id, a.account_id, a.workspace_id, a.tier, a.scopes, a.retry_after, c->>'outcome', c->'run', c->'settled'
  from kiln_private.authorize_controls(p_key_hashes, p_read_rpm) a
  left join lateral (
    select kiln.cancel_workflow_run(a.account_id, p_workflow_ids[a.ord], p_run_ids[a.ord]) as c where a.status = 'ok'
  ) x on true
  order by a.ord;
$$;
comment on function kiln.cancel_workflow_runs_for_keys(bytea[],integer,uuid[],uuid[]) is 'POST /workflows/{id}/runs/{runId}/cancel for a batch in one transaction: authorizes each key (write scope, the per-key read bucket, the key''s own rpm) and, when admitted, cancels that run of the key''s account (kiln.cancel_workflow_run; outcome null when not admitted; settled: the generations it ended).';
