-- functions/kiln.set_workspace_plan.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.set_workspace_plan.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.set_workspace_plan(p_workspace_id uuid, p_status text, p_budget_micros bigint, p_set_budget boolean)
 RETURNS kiln_private.workspaces
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
$function$;
comment on function kiln.set_workspace_plan(uuid,text,bigint,boolean) is 'Sets a workspace''s Team plan status (active or lapsed) and optionally its pooled budget (null = unlimited).';
