-- functions/kiln.claim_orphan_objects.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.claim_orphan_objects.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.claim_orphan_objects(p_grace_seconds integer, p_limit integer)
 RETURNS SETOF text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- Notes whose key a row references are settled: drop them.
  delete from kiln_private.object_intents i
  where i.created_at < now() - make_interval(secs => p_grace_seconds)
    and exists (select 1 from kiln_private.objects o where o.location = i.location);
  -- A claim commits before any byte is deleted; one left by a sweep that died is taken again
  -- after another grace period.
  return query
    update kiln_private.object_intents i set claimed_at = now()
    where i.location in (
      select c.location from kiln_private.object_intents c
      where c.created_at < now() - make_interval(secs => p_grace_seconds)
        and (c.claimed_at is null or c.claimed_at < now() - make_interval(secs => p_grace_seconds))
      order by c.created_at
      limit p_limit
      for update skip locked)
    returning i.location;
end;
$function$;
comment on function kiln.claim_orphan_objects(integer,integer) is 'Claims up to p_limit bucket keys noted more than p_grace_seconds ago that no object row references (a claimed key can no longer be referenced, see kiln_private.take_object_intent): the sweep deletes their bytes, then calls kiln.forget_object_intents. The grace outlasts any presigned URL.';
