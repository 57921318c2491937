-- functions/kiln.admin_list_accounts.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.admin_list_accounts.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.admin_list_accounts(p_limit integer, p_after_used bigint, p_after_id uuid, p_q text)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  -- The sort is (spend this period desc, id desc); a cursor is the last row's pair.
  -- Without a cursor, a pair above every row: each walk is then one index range, generic plan or not.
  v_after_used bigint := case when p_after_id is null then 9223372036854775807 else p_after_used end;
  v_after_id uuid := coalesce(p_after_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
  v_zero_after uuid := case when p_after_id is null or p_after_used > 0 then 'ffffffff-ffff-ffff-ffff-ffffffffffff' else p_after_id end;
  v_pattern text;
  v_ids uuid[] := '{}';
  v_used bigint[] := '{}';
  v_more uuid[];
  v_more_used bigint[];
  v_need int;
begin
  if p_limit is null or p_limit < 1 or p_limit > 200 then
    raise exception 'limit must be between 1 and 200' using errcode = 'KI001';
  end if;
  if p_q is not null then
    v_pattern := '%' || replace(replace(replace(lower(p_q), '\', '\\'), '%', '\%'), '_', '\_') || '%';
  end if;

  if v_pattern is not null and (select count(*) from (select 1 from kiln_private.accounts a
                                                       where lower(a.email) like v_pattern limit 5000) x) < 5000 then
    -- A narrow search (under 5,000 matches, found through the trigram index): rank the matches.
    select coalesce(array_agg(m.id order by m.used desc, m.id desc), '{}'), coalesce(array_agg(m.used order by m.used desc, m.id desc), '{}')
      into v_ids, v_used
      from (select x.id, x.used
            -- Each match's spend by primary key (offset 0: never a hash join over every account's row).
            from (select a.id, case when s.period_end > now() then s.used_micros else 0 end as used
                  from kiln_private.accounts a
                  cross join lateral (select y.used_micros, y.period_end from kiln_private.account_spend y
                                      where y.account_id = a.id offset 0) s
                  where lower(a.email) like v_pattern) x
            where (x.used, x.id) < (v_after_used, v_after_id)
            order by x.used desc, x.id desc
            limit p_limit + 1) m;
  else
    -- Everyone, or a wide search (matches are dense in any order): walk account_spend_used_idx
    -- backwards from the cursor, checking each row's email by primary key as it goes (offset 0
    -- keeps the check a per-row lookup, never a semi-join that first reads every match). First
    -- who spent this period…
    select coalesce(array_agg(p.account_id order by p.used_micros desc, p.account_id desc), '{}'),
           coalesce(array_agg(p.used_micros order by p.used_micros desc, p.account_id desc), '{}')
      into v_ids, v_used
      from (select s.account_id, s.used_micros from kiln_private.account_spend s
            where s.used_micros > 0 and s.period_end > now()
              and (s.used_micros, s.account_id) < (v_after_used, v_after_id)
              and (v_pattern is null or exists (select 1 from kiln_private.accounts a where a.id = s.account_id and lower(a.email) like v_pattern offset 0))
            order by s.used_micros desc, s.account_id desc
            limit p_limit + 1) p;
    v_need := p_limit + 1 - cardinality(v_ids);
    if v_need > 0 then
      -- …then who spent nothing (including periods that rolled without a charge), by id.
      select coalesce(array_agg(z.account_id order by z.account_id desc), '{}'), coalesce(array_agg(0::bigint), '{}')
        into v_more, v_more_used
        from (select u.account_id from (
                (select s.account_id from kiln_private.account_spend s
                 where s.used_micros = 0 and s.account_id < v_zero_after
                   and (v_pattern is null or exists (select 1 from kiln_private.accounts a where a.id = s.account_id and lower(a.email) like v_pattern offset 0))
                 order by s.used_micros desc, s.account_id desc limit v_need)
                union all
                (select s.account_id from kiln_private.account_spend s
                 where s.used_micros > 0 and s.period_end <= now() and s.account_id < v_zero_after
                   and (v_pattern is null or exists (select 1 from kiln_private.accounts a where a.id = s.account_id and lower(a.email) like v_pattern offset 0))
                 order by s.account_id desc limit v_need)) u
              order by u.account_id desc limit v_need) z;
      v_ids := v_ids || v_more;
      v_used := v_used || v_more_used;
    end if;
  end if;

  return json_build_object(
    -- One primary-key lookup per row (offset 0 keeps the planner from hashing the whole table).
    'data', coalesce((select json_agg(kiln_private.admin_account_json(a.a, v_used[o.i]) order by o.i)
                      from unnest(v_ids[1:p_limit]) with ordinality as o(id, i)
                      cross join lateral (select x as a from kiln_private.accounts x where x.id = o.id offset 0) a), '[]'),
    'nextCursor', case when cardinality(v_ids) > p_limit then v_used[p_limit] || '.' || v_ids[p_limit] end);
end;
$function$;
comment on function kiln.admin_list_accounts(integer,bigint,uuid,text) is 'GET /admin/accounts: a page of accounts sorted by spend this period (held + settled, desc; then id desc), after the cursor (the previous page''s last spend and id), optionally those whose email contains p_q. Reads kiln_private.account_spend through its index, so a page costs what it returns: a search with under 5,000 matches ranks them alone (trigram index), a wider one filters the ordered walk.';
