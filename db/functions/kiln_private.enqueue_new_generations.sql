-- functions/kiln_private.enqueue_new_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.enqueue_new_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.enqueue_new_generations(p_ids uuid[], p_max_attempts integer)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_task int;
begin
  if coalesce(cardinality(p_ids), 0) = 0 then
    return;
  end if;
  -- The one place Kiln names graphile-worker's private tables, kept only while it measurably pays
  -- (≥ 10 % on POST /generations; test/db.worker_api.test.ts allows no other). These are brand-new
  -- generation ids, so no job can hold their key: the rows are exactly what add_jobs writes for a
  -- new key, without its clearing of locked jobs' keys (test/db.enqueue.test.ts compares the two
  -- and fails when graphile-worker's table layout changes). Measured against plain
  -- graphile_worker.add_jobs by the bench's generations section (paired rounds, queue drained
  -- before each; 2-core VM shared with other work, load average 13–37), three runs on 2026-11-24/25:
  -- POST /generations +13.6 % (1,345 vs 1,022 req/s), +8.7 % (846 vs 759), +33.3 % (777 vs 654);
  -- median +13.6 %, and less Postgres CPU per request in every run (344 vs 532 µs, 311 vs 386,
  -- 292 vs 392). Per call on one connection: 80–150 µs for one id vs 570–1,310 µs with add_jobs.
  -- When a run on a quiet machine shows under 10 % (BENCH.md, Generations), this function goes
  -- back to kiln_private.enqueue_generations.
  select id into v_task from graphile_worker._private_tasks where identifier = 'generation__run';
  if not found then
    perform kiln_private.enqueue_generations(p_ids, p_max_attempts);
    return;
  end if;
  insert into graphile_worker._private_jobs (task_id, payload, max_attempts, key)
    select v_task, json_build_object('id', g), kiln_private.generation_job_attempts(), g::text from unnest(p_ids) g;
  perform pg_notify('jobs:insert', '{"r":' || random()::text || ',"count":' || cardinality(p_ids)::text || '}');
end;
$function$;
comment on function kiln_private.enqueue_new_generations(uuid[],integer) is 'Queues generation__run jobs for generations created in this transaction (their keys cannot exist yet): the rows graphile_worker.add_jobs would write, in one insert — the one function allowed to name graphile-worker''s private tables, while it gains ≥ 10 % on POST /generations (median of three bench runs on 2026-11-24/25: +13.6 %; BENCH.md). Every other enqueue uses kiln_private.enqueue_generations (add_jobs).';
