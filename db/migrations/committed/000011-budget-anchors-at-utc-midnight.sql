--! Previous: sha1:468fd0939a29aa9de2c19a05c97e41798fad718b
--! Hash: sha1:de210d20f6d0dfaed4a0079b385c1368ecae6c25
--! Message: budget anchors at UTC midnight

--! split: 1-current.sql
-- Budget anchors at UTC midnight, whatever the session's time zone.
--
-- period_start counts months in UTC (000010), but new accounts and newly activated Team plans
-- were anchored at date_trunc('day', now()), which truncates in the session's TimeZone: on a
-- server running in America/New_York every period began at 05:00 UTC, and GET /usage's resetsAt
-- said so. The three-argument date_trunc truncates in UTC. Existing anchors are left as they are
-- (changing one would move a running period).
--
-- Idempotent (graphile-migrate "current"): column defaults and create or replace.

alter table kiln_private.accounts alter column period_anchor set default date_trunc('day', now(), 'UTC');
alter table kiln_private.workspaces alter column plan_period_anchor set default date_trunc('day', now(), 'UTC');

create or replace function kiln.set_workspace_plan(p_workspace_id uuid, p_status text, p_budget_micros bigint, p_set_budget boolean)
  returns kiln_private.workspaces
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_ws kiln_private.workspaces;
begin
  update kiln_private.workspaces
    set plan_status = p_status,
        plan_budget_micros = case when p_set_budget then p_budget_micros else plan_budget_micros end,
        plan_period_anchor = case when plan_status = 'none' then date_trunc('day', now(), 'UTC') else plan_period_anchor end
    where id = p_workspace_id
    returning * into v_ws;
  if not found then
    raise exception 'workspace not found' using errcode = 'KN001';
  end if;
  return v_ws;
exception
  when check_violation then
    raise exception 'invalid plan status or budget' using errcode = 'KI001';
end;
$$;
