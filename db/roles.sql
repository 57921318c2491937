-- Cluster-wide roles Kiln's migrations grant to, made outside the migrations (graphile-migrate:
-- "roles outside migrations"): `kiln migrate` runs this before migrating, and .gmrc's afterReset
-- runs it on the databases graphile-migrate resets (the shadow of `kiln gm commit`). Idempotent,
-- and safe when two migrations start at once.
--
-- kiln_analyst (NOLOGIN): SELECT on the documented analyst views, nothing else
-- (docs/analysts.md). An operator grants it to people: `grant kiln_analyst to alice;`.
do $$
begin
  if not exists (select 1 from pg_catalog.pg_roles where rolname = 'kiln_analyst') then
    create role kiln_analyst nologin;
  end if;
exception when duplicate_object or unique_violation then
  null; -- another migration made it meanwhile
end
$$;
