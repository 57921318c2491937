-- functions/kiln_private.claim_idempotency_keys.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.claim_idempotency_keys.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.claim_idempotency_keys(p_account_ids uuid[], p_operations text[], p_keys text[], p_fingerprints bytea[], p_statuses integer[], p_bodies jsonb[], p_ttl_seconds integer)
 RETURNS TABLE(ord integer, outcome text, leader integer, response_status integer, response_body jsonb)
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
#variable_conflict use_column
declare
  v_claimed int[];
begin
  -- 1. The first request of each (account, operation, key) of the set claims it: a new row, or an
  --    expired one taken over (the lazy purge). Rows go in key order, so two sets claiming the same
  --    keys cannot deadlock. A key claimed by a transaction still in flight makes this insert wait
  --    for it: committed, its row is the answer (locked here until this transaction ends, so it
  --    cannot expire under us); rolled back (refused), the key is free and claimed here.
  with req as (
    select s.i, p_account_ids[s.i] as a, p_operations[s.i] as op, p_keys[s.i] as k,
           row_number() over (partition by p_account_ids[s.i], p_operations[s.i], p_keys[s.i] order by s.i) as n
    from generate_subscripts(p_keys, 1) as s(i)
    where p_keys[s.i] is not null and p_account_ids[s.i] is not null
  ), ins as (
    insert into kiln_private.idempotency_keys as t
      (account_id, operation, key, fingerprint, response_status, response_body, expires_at)
    select r.a, r.op, r.k, p_fingerprints[r.i], p_statuses[r.i], p_bodies[r.i], now() + make_interval(secs => p_ttl_seconds)
    from req r where r.n = 1
    order by r.a, r.op, r.k
    on conflict (account_id, operation, key) do update
      set fingerprint = excluded.fingerprint, response_status = excluded.response_status,
          response_body = excluded.response_body, created_at = excluded.created_at, expires_at = excluded.expires_at
      where t.expires_at <= now()
    returning t.account_id, t.operation, t.key
  )
  select array_agg(r.i) into v_claimed
    from req r join ins on ins.account_id = r.a and ins.operation = r.op and ins.key = r.k
    where r.n = 1;

  -- 2. Everyone's outcome. A new statement: it sees what the transactions waited for committed.
  --    claimed: this request goes ahead; follower: same body as its leader of this set, which
  --    went ahead; replay: the stored answer, same body; conflict: another body; pending: no
  --    stored answer to give (never committed so; answered as retryable). The stored row is a
  --    correlated subquery, one primary-key probe per unclaimed request: a join could be planned
  --    (and cached, generic) as a scan of the whole table.
  return query
    with req as (
      select s.i, p_account_ids[s.i] as a, p_operations[s.i] as op, p_keys[s.i] as k, p_fingerprints[s.i] as fp,
             min(s.i) over (partition by p_account_ids[s.i], p_operations[s.i], p_keys[s.i]) as lead
      from generate_subscripts(p_keys, 1) as s(i)
      where p_keys[s.i] is not null and p_account_ids[s.i] is not null
    ), outcome as (
      select r.*, r.lead = any (coalesce(v_claimed, '{}')) as claimed,
             case when not (r.lead = any (coalesce(v_claimed, '{}'))) then (
               select t from kiln_private.idempotency_keys t where t.account_id = r.a and t.operation = r.op and t.key = r.k) end as t
      from req r
    )
    select s.i::int,
           case
             when o.i is null then null
             when o.claimed then
               case when o.i = o.lead then 'claimed' when o.fp = p_fingerprints[o.lead] then 'follower' else 'conflict' end
             when (o.t).account_id is null then 'pending'
             when (o.t).fingerprint <> o.fp then 'conflict'
             when (o.t).response_body is null then 'pending'
             else 'replay'
           end,
           o.lead::int,
           case when (o.t).fingerprint = o.fp then (o.t).response_status::int end,
           case when (o.t).fingerprint = o.fp then (o.t).response_body end
    from generate_subscripts(p_keys, 1) as s(i)
    left join outcome o on o.i = s.i
    order by s.i;
end;
$function$;
comment on function kiln_private.claim_idempotency_keys(uuid[],text[],text[],bytea[],integer[],jsonb[],integer) is 'Claims the Idempotency-Keys of a set of requests (null key = none) in the caller''s transaction, storing each claimant''s fingerprint and the answer it will get if accepted (status, body; the caller deletes the claim of a request it refuses). Each row says claimed, follower (of the request `leader` of the same set), replay (with the stored status and body), conflict (another body) or pending.';
