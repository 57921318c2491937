-- functions/kiln.get_daily_usage.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_daily_usage.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_daily_usage(p_account_id uuid, p_workspace_id uuid, p_from date, p_to date)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
declare
  v_anchor timestamptz;
  v_visible boolean := true;
  v_period timestamptz;
  v_from date := p_from;
  v_to date := p_to;
  v_pool uuid := coalesce(p_workspace_id, p_account_id);
  v_days json;
begin
  if p_workspace_id is null then
    select a.period_anchor into v_anchor from kiln_private.accounts a where a.id = p_account_id;
  else
    -- A workspace's spend is shown to its current members only (a key whose owner left sees none).
    select w.plan_period_anchor,
           exists (select 1 from kiln_private.workspace_members m
                   where m.workspace_id = w.id and m.account_id = p_account_id and m.left_at is null)
      into v_anchor, v_visible
      from kiln_private.workspaces w where w.id = p_workspace_id;
  end if;
  if v_anchor is null then
    return null;
  end if;
  if v_from is null then
    -- The current period, as GET /usage counts it: [period start, next period start) in UTC days.
    v_period := kiln_private.period_start(v_anchor, now());
    v_from := (v_period at time zone 'UTC')::date;
    v_to := ((v_period + interval '1 month') at time zone 'UTC')::date - 1;
  elsif v_to is null then
    v_to := (now() at time zone 'UTC')::date;
  end if;
  if v_from > v_to or v_to - v_from > 365 then
    raise exception 'from must not be after to, and the range at most 366 days' using errcode = 'KI001';
  end if;
  select coalesce(json_agg(json_build_object(
           'day', to_char(x.day, 'YYYY-MM-DD'), 'model_id', x.model_id,
           'spend_micros', x.spend, 'charges', x.charges, 'held_micros', x.held,
           -- The same, split by lane: batch lines and everything else; the parts add up to the totals.
           'batch', json_build_object('spend_micros', x.b_spend, 'charges', x.b_charges, 'held_micros', x.b_held),
           'interactive', json_build_object('spend_micros', x.spend - x.b_spend, 'charges', x.charges - x.b_charges,
                                            'held_micros', x.held - x.b_held)) order by x.day, x.model_id), '[]')
    into v_days
    from (select d.day, d.model_id, sum(d.spend)::bigint as spend, sum(d.charges)::bigint as charges, sum(d.held)::bigint as held,
                 sum(d.b_spend)::bigint as b_spend, sum(d.b_charges)::bigint as b_charges, sum(d.b_held)::bigint as b_held
          from (-- Ended charges from the rollup (a released one counts nothing).
                select r.day, r.model_id, r.spend_micros as spend, r.settled_charges as charges, 0::bigint as held,
                       r.batch_spend_micros as b_spend, r.batch_settled_charges as b_charges, 0::bigint as b_held
                from kiln_private.charge_days r
                where v_visible and r.pool_id = v_pool and r.day between v_from and v_to
                union all
                -- Reservations still open, at their reserved amount (charges_open_idx).
                select (c.created_at at time zone 'UTC')::date, c.model_id, c.reserved_micros, 1, c.reserved_micros,
                       case when c.batch_id is not null then c.reserved_micros else 0 end, (c.batch_id is not null)::int,
                       case when c.batch_id is not null then c.reserved_micros else 0 end
                from kiln_private.charges c
                where v_visible and c.status = 'reserved' and c.pool_id = v_pool
                  and c.created_at >= (v_from::timestamp at time zone 'UTC')
                  and c.created_at < ((v_to + 1)::timestamp at time zone 'UTC')) d
          group by d.day, d.model_id
          having sum(d.charges) > 0) x;
  return json_build_object(
    'scope', case when p_workspace_id is null then 'personal' else 'workspace' end,
    'workspace_id', p_workspace_id,
    'from', to_char(v_from, 'YYYY-MM-DD'),
    'to', to_char(v_to, 'YYYY-MM-DD'),
    'days', v_days);
end;
$function$;
comment on function kiln.get_daily_usage(uuid,uuid,date,date) is 'The GET /usage/daily body: per UTC day and model, what the caller''s billing scope (the personal pool, or a workspace-bound caller''s Team pool) used — settled charges at their settled amount (kiln_private.charge_days) plus reservations still open at their reserved amount (charges_open_idx), on the day each charge was created, with the batch and interactive parts of each (batch: charges of batch lines). Without p_from: the current period; without p_to: through today. Null when the account (or workspace) does not exist; no days for a workspace the caller is no longer a member of. KI001 for from > to or more than 366 days.';
