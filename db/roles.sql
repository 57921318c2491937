-- Cluster-wide roles Kiln's migrations grant to, made outside the migrations (graphile-migrate:
-- "roles outside migrations"): `kiln migrate` runs this before migrating, and .gmrc's afterReset
-- runs it on the databases graphile-migrate resets (the shadow of `kiln gm commit`). Idempotent,
-- and safe when two migrations start at once. Both are NOLOGIN: an operator grants them to login
-- roles (docs/operators.md, "Database roles").
--
-- kiln_analyst: SELECT on the documented analyst views, nothing else (docs/analysts.md). An
-- operator grants it to people: `grant kiln_analyst to alice;`.
--
-- kiln_app: exactly what the service (`kiln serve | api | worker` and the operator commands other
-- than `kiln migrate` and `kiln gm`) needs at run time: EXECUTE on the kiln functions, the job
-- queue's tables, and nothing it could use to rewrite the record (no table of Kiln's is its to
-- change directly; the audit log is not). It owns nothing. The service connects as a login role
-- that is a member of it: `create role kiln_service login password '…' in role kiln_app;`.
do $$
begin
  if not exists (select 1 from pg_catalog.pg_roles where rolname = 'kiln_analyst') then
    create role kiln_analyst nologin;
  end if;
exception when duplicate_object or unique_violation then
  null; -- another migration made it meanwhile
end
$$;
do $$
begin
  if not exists (select 1 from pg_catalog.pg_roles where rolname = 'kiln_app') then
    create role kiln_app nologin;
  end if;
exception when duplicate_object or unique_violation then
  null;
end
$$;
