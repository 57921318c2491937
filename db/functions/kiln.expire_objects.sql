-- functions/kiln.expire_objects.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.expire_objects.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.expire_objects(p_max_age_seconds bigint, p_limit integer)
 RETURNS TABLE(path text, location text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_at text := to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
  v_paths text[];
  v_locations text[];
  v_owners uuid[];
  v_visibilities text[];
begin
  with victims as (
    select o.path from kiln_private.objects o
    where o.owner_id is not null and o.created_at < now() - p_max_age_seconds * interval '1 second'
    order by o.created_at
    limit p_limit
    for update skip locked
  ), gone as (
    delete from kiln_private.objects o using victims v where o.path = v.path
    returning o.path, o.location, o.owner_id, o.visibility
  )
  select coalesce(array_agg(g.path), '{}'), coalesce(array_agg(g.location), '{}'), coalesce(array_agg(g.owner_id), '{}'),
         coalesce(array_agg(g.visibility), '{}')
    into v_paths, v_locations, v_owners, v_visibilities from gone g;
  if cardinality(v_paths) = 0 then
    return;
  end if;

  insert into kiln_private.expired_objects (path, owner_id, visibility)
    select p, o, v from unnest(v_paths, v_owners, v_visibilities) as u(p, o, v)
    on conflict do nothing;
  -- The bucket keys are deleted by the caller after this commits; noted first so a crash in
  -- between leaves them to the sweep.
  insert into kiln_private.object_intents (location)
    select l from unnest(v_locations) l where l is not null
    on conflict do nothing;

  -- Generations keep their record, status and cost; their result says when the image went.
  update kiln_private.generations g
    set result = g.result || jsonb_build_object('expiredAt', v_at)
    from unnest(v_paths) p
    where g.id = kiln_private.object_generation_id(p) and g.result->>'path' = p and not g.result ? 'expiredAt';
  update kiln_private.workflow_run_outputs o
    set result = o.result || jsonb_build_object('expiredAt', v_at)
    from unnest(v_paths) p
    where o.generation_id = kiln_private.object_generation_id(p) and o.result->>'path' = p and not o.result ? 'expiredAt';
  -- Write-backs on saved workflows: the output node's result loses its path (a later run must
  -- not read it as an input) and says when it expired.
  update kiln_private.workflows w
    set graph = jsonb_set(w.graph, '{nodes}', (
      select jsonb_agg(case when e.n->>'kind' = 'output' and e.n->'result'->>'path' = any (v_paths)
                            then e.n || jsonb_build_object('result', ((e.n->'result') - 'path') || jsonb_build_object('expiredAt', v_at))
                            else e.n end order by e.i)
      from jsonb_array_elements(w.graph->'nodes') with ordinality as e(n, i)))
    where w.id in (
        select r.workflow_id from kiln_private.workflow_runs r
        where r.id in (select (regexp_match(p, '^[0-9a-f-]{36}/workflows/([0-9a-f-]{36})/'))[1]::uuid from unnest(v_paths) p))
      and jsonb_typeof(w.graph->'nodes') = 'array'
      and exists (select 1 from jsonb_array_elements(w.graph->'nodes') n
                  where n->>'kind' = 'output' and n->'result'->>'path' = any (v_paths));

  return query select u.p, u.l from unnest(v_paths, v_locations) as u(p, l);
end;
$function$;
comment on function kiln.expire_objects(bigint,integer) is 'Retention: deletes up to p_limit account-owned objects older than p_max_age_seconds (seeds never), leaves tombstones (410 gone), notes their bucket keys for deletion, and marks the generations, run outputs and workflow write-backs that named them with expiredAt. Records, costs and the ledger are untouched. Returns the removed paths and bucket keys.';
