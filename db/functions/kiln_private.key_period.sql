-- functions/kiln_private.key_period.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.key_period.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.key_period(p_account_id uuid, p_workspace_id uuid)
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select kiln_private.period_start(case when p_workspace_id is null then a.period_anchor else w.plan_period_anchor end, now())
  from kiln_private.accounts a left join kiln_private.workspaces w on w.id = p_workspace_id
  where a.id = p_account_id;
$function$;
comment on function kiln_private.key_period(uuid,uuid) is 'Start of the current billing period of a key''s scope (its workspace''s, else its account''s).';
