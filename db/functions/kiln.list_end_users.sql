-- functions/kiln.list_end_users.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_end_users.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_end_users(p_account_id uuid, p_workspace_id uuid, p_from date, p_to date, p_limit integer, p_after_used bigint, p_after_end_user text)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_pool uuid := coalesce(p_workspace_id, p_account_id);
  v_visible boolean := true;
  v_month boolean;
  v_rows json;
  v_n int;
  v_next json;
begin
  if p_from is null or p_to is null or p_from > p_to or p_to - p_from > 365 then
    raise exception 'from must not be after to, and the range at most 366 days' using errcode = 'KI001';
  end if;
  if p_limit is null or p_limit < 1 or p_limit > 1000 then
    raise exception 'limit must be from 1 to 1000' using errcode = 'KI001';
  end if;
  if p_workspace_id is null then
    if not exists (select 1 from kiln_private.accounts a where a.id = p_account_id) then
      return null;
    end if;
  else
    -- A workspace's end users are shown to its current members only.
    select exists (select 1 from kiln_private.workspace_members m
                   where m.workspace_id = w.id and m.account_id = p_account_id and m.left_at is null)
      into v_visible
      from kiln_private.workspaces w where w.id = p_workspace_id;
    if not found then
      return null;
    end if;
  end if;
  -- A whole calendar month reads the month's rollup in spend order; any other range sums its days.
  v_month := p_from = date_trunc('month', p_from)::date and p_to = (date_trunc('month', p_from) + interval '1 month - 1 day')::date;
  if v_visible then
    execute format($q$
      with open as materialized (
        -- Reservations in flight (charges_open_idx), at their reserved amount, per end user.
        select c.end_user collate "C" as grp, count(*)::bigint as n, sum(c.reserved_micros)::bigint as held
        from kiln_private.charges c
        where c.status = 'reserved' and c.pool_id = $1 and c.created_at >= $4 and c.created_at < $5 and c.end_user is not null
        group by 1
      ), listed as (%s)
      select json_agg(json_build_object('endUser', x.grp, 'usedMicros', x.used, 'generations', x.gens) order by x.used desc, x.grp),
             count(*)
      from (select l.grp, l.used, l.gens from listed l order by l.used desc, l.grp limit $6 + 1) x
      $q$,
      case when v_month then format($m$
        (select o.grp, coalesce(m.spend_micros, 0) + o.held as used, coalesce(m.settled_charges, 0) + o.n as gens
         from open o left join kiln_private.charge_end_user_months m on m.pool_id = $1 and m.month = $2 and m.end_user = o.grp
         where $7 is null or coalesce(m.spend_micros, 0) + o.held < $7
            or (coalesce(m.spend_micros, 0) + o.held = $7 and o.grp > $8))
        union all
        -- Every other end user straight from the month's rollup, in the index's order.
        (select m.end_user, m.spend_micros, m.settled_charges
         from kiln_private.charge_end_user_months m
         where m.pool_id = $1 and m.month = $2 and m.settled_charges > 0 %s
           and m.end_user not in (select o.grp from open o)
         order by (- m.spend_micros), m.end_user
         limit $6 + 1)$m$,
        case when p_after_used is not null then 'and ((- m.spend_micros), m.end_user) > ((- $7), $8)' else '' end)
      else $d$
        select s.grp, s.used, s.gens
        from (select d.grp, sum(d.spend)::bigint as used, sum(d.charges)::bigint as gens
              from (select r.end_user as grp, r.spend_micros as spend, r.settled_charges as charges
                    from kiln_private.charge_end_user_days r
                    where r.pool_id = $1 and r.day between $2 and $3 and r.settled_charges > 0
                    union all
                    select o.grp, o.held, o.n from open o) d
              group by d.grp) s
        where $7 is null or s.used < $7 or (s.used = $7 and s.grp > $8)$d$ end)
    into v_rows, v_n
    using v_pool, p_from, p_to, (p_from::timestamp at time zone 'UTC'), ((p_to + 1)::timestamp at time zone 'UTC'),
          p_limit, p_after_used, p_after_end_user;
  end if;
  v_rows := coalesce(v_rows, '[]');
  if coalesce(v_n, 0) > p_limit then
    v_next := json_build_object('used', (v_rows->(p_limit - 1)->>'usedMicros')::bigint, 'endUser', v_rows->(p_limit - 1)->>'endUser');
    select json_agg(e order by i) into v_rows from json_array_elements(v_rows) with ordinality t(e, i) where i <= p_limit;
  end if;
  return json_build_object('data', v_rows, 'next', v_next);
end;
$function$;
comment on function kiln.list_end_users(uuid,uuid,date,date,integer,bigint,text) is 'GET /end-users: the end users of the caller''s billing scope (the personal pool, or a workspace-bound caller''s Team pool) with charges on the UTC days p_from..p_to, {endUser, usedMicros (settled charges at their cost plus reservations in flight at their reserved amount), generations (charges counted: settled and in flight)}, by usedMicros descending then endUser; a keyset page after (p_after_used, p_after_end_user): {data, next}. A whole calendar month reads kiln_private.charge_end_user_months in index order (a page reads a page); another range sums charge_end_user_days over it. Null when the account (or workspace) does not exist; no end users for a workspace the caller is no longer a member of. KI001 for a bad range or limit (1 to 1000).';
