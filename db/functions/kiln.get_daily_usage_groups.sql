-- functions/kiln.get_daily_usage_groups.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_daily_usage_groups.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_daily_usage_groups(p_account_id uuid, p_workspace_id uuid, p_from date, p_to date, p_group_by text, p_limit integer, p_after_day date, p_after_spend bigint, p_after_group text, p_after_null boolean)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_body json;
  v_visible boolean := true;
  v_pool uuid := coalesce(p_workspace_id, p_account_id);
  v_from date;
  v_to date;
  v_key text;
  v_rollup text;
  v_col text;
  v_keyfilter text := '';
  v_open text;
  v_after text := '';
  v_rows json;
  v_n int;
  v_next json;
begin
  if p_group_by is null or p_group_by !~ '^(endUser|metadata\.[A-Za-z0-9_.:-]{1,64})$' then
    raise exception 'groupBy must be endUser or metadata.<key>' using errcode = 'KI001';
  end if;
  if p_limit is null or p_limit < 1 or p_limit > 1000 then
    raise exception 'limit must be from 1 to 1000' using errcode = 'KI001';
  end if;
  -- The body of GET /usage/daily (its days are the totals the groups add up to), its range resolved.
  v_body := kiln.get_daily_usage(p_account_id, p_workspace_id, p_from, p_to);
  if v_body is null then
    return null;
  end if;
  v_from := (v_body->>'from')::date;
  v_to := (v_body->>'to')::date;
  if p_workspace_id is not null then
    v_visible := exists (select 1 from kiln_private.workspace_members m
                         where m.workspace_id = p_workspace_id and m.account_id = p_account_id and m.left_at is null);
  end if;
  if p_group_by = 'endUser' then
    v_rollup := 'kiln_private.charge_end_user_days';
    v_col := 'r.end_user';
    v_open := 'c.end_user';
  else
    v_key := substr(p_group_by, 10);
    v_rollup := 'kiln_private.charge_metadata_days';
    v_col := 'r.mvalue';
    v_keyfilter := 'and r.mkey = $6';
    v_open := 'c.metadata->>$6';
  end if;
  -- Keyset position in (day, spend desc, group with null last), as the index reads the rollup.
  if p_after_day is not null then
    v_after := case when p_after_null then format('and (r.day, (- r.spend_micros)) > ($9, (- $10))')
                    else format('and (r.day, (- r.spend_micros), %s) > ($9, (- $10), $11)', v_col) end;
  end if;
  if v_visible then
    execute format($q$
      with open as materialized (
        -- Reservations in flight (charges_open_idx), at their reserved amount, per day and group.
        select (c.created_at at time zone 'UTC')::date as day, (%4$s) collate "C" as grp,
               count(*)::bigint as n, sum(c.reserved_micros)::bigint as held,
               count(c.batch_id)::bigint as b_n,
               coalesce(sum(c.reserved_micros) filter (where c.batch_id is not null), 0)::bigint as b_held
        from kiln_private.charges c
        where c.status = 'reserved' and c.pool_id = $1 and c.created_at >= $4 and c.created_at < $5
        group by 1, 2
      ), totals as (
        -- The day's total, as GET /usage/daily's days add up to it.
        select d.day, sum(d.spend)::bigint as spend, sum(d.charges)::bigint as charges, sum(d.held)::bigint as held,
               sum(d.b_spend)::bigint as b_spend, sum(d.b_charges)::bigint as b_charges, sum(d.b_held)::bigint as b_held
        from (select r.day, r.spend_micros as spend, r.settled_charges as charges, 0::bigint as held,
                     r.batch_spend_micros as b_spend, r.batch_settled_charges as b_charges, 0::bigint as b_held
              from kiln_private.charge_days r where r.pool_id = $1 and r.day between $2 and $3
              union all
              select o.day, o.held, o.n, o.held, o.b_held, o.b_n, o.b_held from open o) d
        group by d.day
      ), grouped as (
        -- What the day's groups add up to.
        select d.day, sum(d.spend)::bigint as spend, sum(d.charges)::bigint as charges, sum(d.held)::bigint as held,
               sum(d.b_spend)::bigint as b_spend, sum(d.b_charges)::bigint as b_charges, sum(d.b_held)::bigint as b_held
        from (select a.day, a.spend_micros as spend, a.settled_charges as charges, 0::bigint as held,
                     a.batch_spend_micros as b_spend, a.batch_settled_charges as b_charges, 0::bigint as b_held
              from kiln_private.charge_attribute_days a where a.pool_id = $1 and a.attribute = $7 and a.day between $2 and $3
              union all
              select o.day, o.held, o.n, o.held, o.b_held, o.b_n, o.b_held from open o where o.grp is not null) d
        group by d.day
      ), extra as (
        -- The null group: the day's total minus its groups.
        select t.day, null::text collate "C" as grp, t.spend - coalesce(g.spend, 0) as spend, t.charges - coalesce(g.charges, 0) as charges,
               t.held - coalesce(g.held, 0) as held, t.b_spend - coalesce(g.b_spend, 0) as b_spend,
               t.b_charges - coalesce(g.b_charges, 0) as b_charges, t.b_held - coalesce(g.b_held, 0) as b_held
        from totals t left join grouped g on g.day = t.day
        where t.charges - coalesce(g.charges, 0) > 0
        union all
        -- Groups with reservations in flight: their rollup row plus what they hold.
        select o.day, o.grp, coalesce(r.spend_micros, 0) + o.held, coalesce(r.settled_charges, 0) + o.n, o.held,
               coalesce(r.batch_spend_micros, 0) + o.b_held, coalesce(r.batch_settled_charges, 0) + o.b_n, o.b_held
        from open o left join %1$s r on r.pool_id = $1 and r.day = o.day and %2$s = o.grp %3$s
        where o.grp is not null
      ), page as (
        (select e.* from extra e
         where $9 is null or e.day > $9
            or (e.day = $9 and (e.spend < $10 or (e.spend = $10 and not $12 and (e.grp is null or e.grp > $11)))))
        union all
        -- Every other group straight from the rollup, in the index's order: a page reads a page.
        (select r.day, %2$s, r.spend_micros, r.settled_charges, 0::bigint,
                r.batch_spend_micros, r.batch_settled_charges, 0::bigint
         from %1$s r
         where r.pool_id = $1 %3$s and r.day between $2 and $3 and r.settled_charges > 0 %5$s
           and (r.day, %2$s) not in (select o.day, o.grp from open o where o.grp is not null)
         order by r.day, (- r.spend_micros), %2$s
         limit $8 + 1)
      )
      select json_agg(json_build_object(
               'day', to_char(x.day, 'YYYY-MM-DD'), 'group', x.grp,
               'spend_micros', x.spend, 'charges', x.charges, 'held_micros', x.held,
               'batch', json_build_object('spend_micros', x.b_spend, 'charges', x.b_charges, 'held_micros', x.b_held),
               'interactive', json_build_object('spend_micros', x.spend - x.b_spend, 'charges', x.charges - x.b_charges,
                                                'held_micros', x.held - x.b_held)) order by x.ord),
             count(*)
      from (select p.*, row_number() over (order by p.day, p.spend desc, p.grp nulls last) as ord
            from page p order by p.day, p.spend desc, p.grp nulls last limit $8 + 1) x
      $q$, v_rollup, v_col, v_keyfilter, v_open, v_after)
    into v_rows, v_n
    using v_pool, v_from, v_to, (v_from::timestamp at time zone 'UTC'), ((v_to + 1)::timestamp at time zone 'UTC'),
          v_key, p_group_by, p_limit, p_after_day, p_after_spend, p_after_group, coalesce(p_after_null, false);
  end if;
  v_rows := coalesce(v_rows, '[]');
  if coalesce(v_n, 0) > p_limit then
    -- The position of the page's last row; the extra row only says there is more.
    v_next := json_build_object('day', v_rows->(p_limit - 1)->>'day', 'spend', (v_rows->(p_limit - 1)->>'spend_micros')::bigint,
                                'group', v_rows->(p_limit - 1)->>'group');
    select json_agg(e order by i) into v_rows from json_array_elements(v_rows) with ordinality t(e, i) where i <= p_limit;
  end if;
  return json_build_object(
    'scope', v_body->'scope', 'workspace_id', v_body->'workspace_id', 'from', v_body->'from', 'to', v_body->'to',
    'days', v_body->'days', 'groupBy', p_group_by, 'groups', v_rows, 'next', v_next);
end;
$function$;
comment on function kiln.get_daily_usage_groups(uuid,uuid,date,date,text,integer,date,bigint,text,boolean) is 'GET /usage/daily?groupBy=: kiln.get_daily_usage''s body plus groupBy, groups (per UTC day and group — an end user, or a value of one metadata key — spend_micros, charges and held_micros as the days count them, with the batch and interactive parts; group null: the charges without the attribute, the day''s total minus its groups, so a day''s groups add up exactly to its days) and next (the position after the page, or null). Ordered by day, spend descending, group (null last); a keyset page after (p_after_day, p_after_spend, p_after_group or p_after_null) read from the rollups (charge_end_user_days, charge_metadata_days, charge_attribute_days) in index order, plus the open reservations (charges_open_idx). Null when the account (or workspace) does not exist; no groups for a workspace the caller is no longer a member of. KI001 for a bad groupBy or limit (1 to 1000), or a bad range.';
