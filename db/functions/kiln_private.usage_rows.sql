-- functions/kiln_private.usage_rows.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.usage_rows.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.usage_rows(p_account_id uuid, p_workspace_id uuid, p_key_id uuid)
 RETURNS TABLE(usage json)
 LANGUAGE sql
 STABLE
AS $function$
  select json_build_object(
    'tier', acct.tier,
    'token_budget_micros', acct.budget_micros,
    'used_micros', coalesce(bp.held_micros + bp.settled_micros, 0),
    'remaining_micros', case when acct.budget_micros is not null
                             then greatest(acct.budget_micros - coalesce(bp.held_micros + bp.settled_micros, 0), 0) end,
    'resets_at', case when acct.budget_micros is not null
                      then to_char((acct.period + interval '1 month') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') end,
    'scope', case when p_workspace_id is null then 'personal' else 'workspace' end,
    'workspace_id', p_workspace_id,
    'workspace_budget_micros', ws.plan_budget_micros,
    'workspace_used_micros', case when ws.id is not null then coalesce(wbp.held_micros + wbp.settled_micros, 0) end,
    'workspace_remaining_micros', case when ws.plan_budget_micros is not null
                                       then greatest(ws.plan_budget_micros - coalesce(wbp.held_micros + wbp.settled_micros, 0), 0) end,
    'workspace_resets_at', case when ws.id is not null
                                then to_char((ws.period + interval '1 month') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') end,
    'key_budget_micros', k.budget_micros,
    'key_used_micros', case when k.budget_micros is not null then coalesce(kb.held_micros + kb.settled_micros, 0) end,
    'key_remaining_micros', case when k.budget_micros is not null then greatest(k.budget_micros - coalesce(kb.held_micros + kb.settled_micros, 0), 0) end)
  from (select a.id, a.tier, a.budget_micros, kiln_private.period_start(a.period_anchor, now()) as period
        from kiln_private.accounts a where a.id = p_account_id) acct
  left join kiln_private.budget_periods bp on bp.pool_id = acct.id and bp.period_start = acct.period
  left join (select w.id, w.plan_budget_micros, kiln_private.period_start(w.plan_period_anchor, now()) as period
             from kiln_private.workspaces w
             where w.id = p_workspace_id and w.plan_status = 'active'
               and exists (select 1 from kiln_private.workspace_members m
                           where m.workspace_id = w.id and m.account_id = p_account_id and m.left_at is null)) ws on true
  left join kiln_private.budget_periods wbp on wbp.pool_id = ws.id and wbp.period_start = ws.period
  left join kiln_private.api_keys k on k.id = p_key_id
  -- A personal key's period is its account's, computed above; a workspace key's, its workspace's.
  left join kiln_private.key_budget_periods kb
    on kb.key_id = k.id
   and kb.period_start = case when k.workspace_id is null and k.account_id = acct.id then acct.period
                              else kiln_private.key_period(k.account_id, k.workspace_id) end;
$function$;
comment on function kiln_private.usage_rows(uuid,uuid,uuid) is 'The GET /usage body as one row (none when the account does not exist), with the calling key''s own budget (key_budget_micros, key_used_micros, key_remaining_micros; null when the key has none); inlined by the planner into callers.';
