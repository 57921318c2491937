-- Status notifications (issue #12, "Wait" and "Live events"): every status change of a
-- generation, and every change of a run's status or settled outputs, sends one NOTIFY on the
-- channel `kiln_status`, whatever function made it (complete, fail, cancel, expire, retry, …).
-- API processes LISTEN once each and wake their in-memory waiters (src/live/hub.ts).
-- Payloads are small JSON: {"k":"generation"|"run","id":…,"a":account id[,"s":status]} —
-- never a result. Notifications are sent at commit, so a waiter woken by one reads the new state.

drop trigger if exists tg_generations__notify on kiln_private.generations;
drop trigger if exists tg_workflow_runs__notify on kiln_private.workflow_runs;
drop trigger if exists tg_workflow_run_outputs__notify on kiln_private.workflow_run_outputs;

create or replace function kiln_private.tg_generations__notify() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  -- The status rides along so that a waiter for a terminal state can skip `processing` without a read.
  perform pg_notify('kiln_status', json_build_object('k', 'generation', 'id', new.id, 'a', new.account_id, 's', new.status)::text);
  return null;
end;
$$;
comment on function kiln_private.tg_generations__notify() is 'Trigger: NOTIFY kiln_status with {k: generation, id, a: account, s: status} when a generation''s status changes.';

create or replace function kiln_private.tg_workflow_runs__notify() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_run_id uuid;
begin
  -- One payload per run for both tables, without a status: identical payloads of one transaction
  -- are delivered once, so settling an output (its row, the run's counters, maybe the run's
  -- status) wakes each waiter once.
  if tg_table_name = 'workflow_runs' then
    v_run_id := new.id;
  else
    v_run_id := new.run_id;
  end if;
  perform pg_notify('kiln_status', json_build_object('k', 'run', 'id', v_run_id, 'a', new.account_id)::text);
  return null;
end;
$$;
comment on function kiln_private.tg_workflow_runs__notify() is 'Trigger on workflow_runs and workflow_run_outputs: NOTIFY kiln_status with {k: run, id: run id, a: account} when a run''s status or counters change or an output settles.';

create trigger tg_generations__notify
  after update of status on kiln_private.generations
  for each row when (old.status is distinct from new.status)
  execute function kiln_private.tg_generations__notify();

create trigger tg_workflow_runs__notify
  after update on kiln_private.workflow_runs
  for each row when (old.status is distinct from new.status or old.settled is distinct from new.settled or old.abandoned is distinct from new.abandoned)
  execute function kiln_private.tg_workflow_runs__notify();

create trigger tg_workflow_run_outputs__notify
  after update of status on kiln_private.workflow_run_outputs
  for each row when (old.status is distinct from new.status and new.status in ('completed', 'failed', 'skipped', 'abandoned'))
  execute function kiln_private.tg_workflow_runs__notify();

-- A run as GET /workflows/{id}/runs/{runId} reads it, plus whether any output can still settle:
-- an event stream ends only when nothing can change any more (a failed run's in-flight outputs
-- may still record results after the run failed).
create or replace function kiln.watch_workflow_run(p_account_id uuid, p_workflow_id uuid, p_run_id uuid) returns json
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select (kiln.get_workflow_run(r.account_id, r.workflow_id, r.id)::jsonb
          || jsonb_build_object('open', r.settled + r.abandoned < r.total))::json
  from kiln_private.workflow_runs r
  where r.id = p_run_id and r.account_id = p_account_id and r.workflow_id = p_workflow_id;
$$;
comment on function kiln.watch_workflow_run(uuid,uuid,uuid) is 'kiln.get_workflow_run plus `open`: whether any output of the run can still settle (settled + abandoned < total). Null when the run is not that account''s run of that workflow.';
