-- functions/kiln.reserve_budget.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.reserve_budget.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.reserve_budget(p_account_id uuid, p_workspace_id uuid, p_key_id uuid, p_model_id text, p_origin text, p_amount_micros bigint, p_generation_id uuid DEFAULT NULL::uuid, p_workflow_run_id uuid DEFAULT NULL::uuid, p_node_id text DEFAULT NULL::text, p_end_user text DEFAULT NULL::text)
 RETURNS kiln_private.charges
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_r record;
  v_charge kiln_private.charges;
begin
  select * into v_r from kiln_private.reserve_budgets(array[p_account_id], array[p_workspace_id], array[p_key_id], array[p_model_id],
    array[p_origin], array[p_amount_micros], array[p_generation_id], array[p_workflow_run_id], array[p_node_id], array[p_end_user]);
  if v_r.error_code is not null then
    raise exception '%', v_r.error_message using errcode = v_r.error_code;
  end if;
  select * into v_charge from kiln_private.charges where id = v_r.charge_id;
  return v_charge;
end;
$function$;
comment on function kiln.reserve_budget(uuid,uuid,uuid,text,text,bigint,uuid,uuid,text,text) is 'kiln_private.reserve_budgets for one request: reserves the worst-case cost on the personal pool or, for workspace-bound calls, the Team pool, and on the key''s and the end user''s (p_end_user) caps when they have one. Raises KQ001 (blocked tier or budget exhausted), KP001 (plan not active, or caller left the workspace), KN001, 22023.';
