-- functions/kiln.doctor_check.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.doctor_check.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.doctor_check(p_stale_seconds integer, p_execution_seconds integer, p_grace_seconds integer, p_limit integer)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_stale interval := make_interval(secs => greatest(p_stale_seconds, 1));
  v_limit int := least(greatest(coalesce(p_limit, 100), 1), 10000);
  v_dead_workers json;
  v_orphan_jobs json;
  v_orphan_charges json;
  v_unsettled json;
  v_double json;
  v_missing json;
begin
  -- Worker leases nobody holds any more (after a restore: every lease of the old cluster), and
  -- pre-lease workers silent past the stale window.
  with dead as (
    select h.*, (select count(*) from graphile_worker.jobs j where j.locked_by = h.pool_id) as locked_jobs
      from kiln_private.worker_heartbeats h
      where (h.lease_key is not null and not kiln_private.lease_key_held(h.lease_key))
         or (h.lease_key is null and h.last_seen < now() - v_stale)
  )
  select json_build_object('count', count(*), 'fixable', count(*), 'items', coalesce((
      select json_agg(json_build_object('worker_id', d.worker_id, 'pool_id', d.pool_id, 'hostname', d.hostname, 'pid', d.pid,
                                        'started_at', d.started_at, 'last_seen', d.last_seen, 'locked_jobs', d.locked_jobs,
                                        'fixable', true) order by d.last_seen)
        from (select * from dead order by last_seen limit v_limit) d), '[]'))
    into v_dead_workers from dead;

  -- Jobs locked by a worker that is not alive: a dead lease, or a pool no live worker registered.
  -- Those of a registered dead lease, or locked longer than the stale window, are safe to unlock;
  -- a younger lock of an unknown pool may be a worker still starting.
  with orphan as (
    select j.id, j.task_identifier, j.key, j.locked_by, j.locked_at,
           exists (select 1 from kiln_private.worker_heartbeats h where h.pool_id = j.locked_by) as registered
      from graphile_worker.jobs j
      where j.locked_by is not null and not kiln_private.worker_alive(j.locked_by, p_stale_seconds)
  )
  select json_build_object('count', count(*), 'fixable', count(*) filter (where registered or locked_at < now() - v_stale), 'items', coalesce((
      select json_agg(json_build_object('job_id', o.id, 'task', o.task_identifier, 'key', o.key, 'locked_by', o.locked_by,
                                        'locked_at', o.locked_at, 'registered', o.registered,
                                        'fixable', o.registered or o.locked_at < now() - v_stale) order by o.locked_at)
        from (select * from orphan order by locked_at limit v_limit) o), '[]'))
    into v_orphan_jobs from orphan;

  -- Ledger rows whose generation or run is not in the database (nor any charge naming neither).
  -- A reservation among them can be released; a settled one is money billed for nothing that
  -- exists here, for the operator to look at; a released one costs nothing and is left alone.
  with orphan as (
    select c.* from kiln_private.charges c
      where c.status <> 'released'
        and ((c.generation_id is null and c.workflow_run_id is null)
          or (c.generation_id is not null and not exists (select 1 from kiln_private.generations g where g.id = c.generation_id))
          or (c.workflow_run_id is not null and not exists (select 1 from kiln_private.workflow_runs r where r.id = c.workflow_run_id)))
  )
  select json_build_object('count', count(*), 'fixable', count(*) filter (where status = 'reserved'), 'items', coalesce((
      select json_agg(json_build_object('charge_id', o.id, 'status', o.status, 'pool_id', o.pool_id, 'account_id', o.account_id,
                                        'generation_id', o.generation_id, 'workflow_run_id', o.workflow_run_id, 'node_id', o.node_id,
                                        'reserved_micros', o.reserved_micros, 'settled_micros', o.settled_micros,
                                        'created_at', o.created_at, 'fixable', o.status = 'reserved') order by o.created_at)
        from (select * from orphan order by created_at limit v_limit) o), '[]'))
    into v_orphan_charges from orphan;

  -- Reservations never settled: held for a generation that has ended, held by a charge its
  -- generation no longer points at (nothing settles it), or held past the generation's run
  -- window (every attempt's deadline and the grace, from when it started or, still pending, was
  -- created; a generation queued behind its account's parallel slots counts from creation too).
  with held as (
    select c.id, c.pool_id, c.generation_id, c.reserved_micros, c.created_at, g.status as generation_status,
           case when g.status in ('completed', 'failed') then 'generation_ended'
                when g.charge_id is distinct from c.id then 'superseded'
                else 'past_run_window' end as reason
      from kiln_private.charges c
      join kiln_private.generations g on g.id = c.generation_id
      where c.status = 'reserved'
        and (g.status in ('completed', 'failed')
             or g.charge_id is distinct from c.id
             or coalesce(g.started_at, g.created_at)
                  < now() - make_interval(secs => g.max_attempts::double precision * greatest(p_execution_seconds, 1) + greatest(p_grace_seconds, 0)))
  )
  select json_build_object('count', count(*), 'fixable', count(*) filter (where reason <> 'past_run_window'), 'items', coalesce((
      select json_agg(json_build_object('charge_id', h.id, 'pool_id', h.pool_id, 'generation_id', h.generation_id,
                                        'generation_status', h.generation_status, 'reason', h.reason,
                                        'reserved_micros', h.reserved_micros, 'created_at', h.created_at,
                                        'fixable', h.reason <> 'past_run_window') order by h.created_at)
        from (select * from held order by created_at limit v_limit) h), '[]'))
    into v_unsettled from held;

  -- A generation settled more than once: charged twice.
  with twice as (
    select c.generation_id, count(*) as settled, sum(c.settled_micros) as settled_micros, min(c.created_at) as first_at
      from kiln_private.charges c
      where c.status = 'settled' and c.generation_id is not null
      group by c.generation_id having count(*) > 1
  )
  select json_build_object('count', count(*), 'fixable', 0, 'items', coalesce((
      select json_agg(json_build_object('generation_id', t.generation_id, 'settled_charges', t.settled,
                                        'settled_micros', t.settled_micros, 'fixable', false) order by t.first_at)
        from (select * from twice order by first_at limit v_limit) t), '[]'))
    into v_double from twice;

  -- Objects referenced by a generation's result but not in the store (no row; retention's
  -- expired paths excepted). The bytes of the s3 store's rows are checked by the caller (HEAD).
  with missing as (
    select g.id, g.account_id, g.result->>'path' as path, g.finished_at
      from kiln_private.generations g
      where g.status = 'completed' and g.type = 'image' and g.result ? 'path'
        and not exists (select 1 from kiln_private.objects o where o.path = g.result->>'path')
        and not exists (select 1 from kiln_private.expired_objects e where e.path = g.result->>'path')
  )
  select json_build_object('count', count(*), 'fixable', 0, 'items', coalesce((
      select json_agg(json_build_object('generation_id', m.id, 'account_id', m.account_id, 'path', m.path,
                                        'finished_at', m.finished_at, 'fixable', false) order by m.finished_at desc)
        from (select * from missing order by finished_at desc limit v_limit) m), '[]'))
    into v_missing from missing;

  return json_build_object(
    'dead_workers', v_dead_workers,
    'orphan_jobs', v_orphan_jobs,
    'orphan_charges', v_orphan_charges,
    'unsettled_reservations', v_unsettled,
    'double_charges', v_double,
    'missing_objects', v_missing);
end;
$function$;
comment on function kiln.doctor_check(integer,integer,integer,integer) is '`kiln doctor`: checks a restored or upgraded database and returns, per check, the count, how many of them kiln.doctor_fix repairs (fixable) and up to p_limit items (each with its own fixable): dead_workers (leases no session holds), orphan_jobs (locked by workers not alive), orphan_charges (held or settled ledger rows without their generation or run), unsettled_reservations (held for an ended generation, superseded, or past the run window: p_execution_seconds per attempt plus p_grace_seconds), double_charges, missing_objects (generation results without a store row). Reads only.';
