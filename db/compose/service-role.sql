-- The service's login role, made once by the database's superuser (docker-compose.yml runs this at
-- the Postgres container's first start, through db/compose/service-role.sh): a member of kiln_app,
-- which `kiln migrate` grants exactly what the service needs (docs/operators.md, "Database roles").
-- psql variables: service_role, service_password. Idempotent.
\set ON_ERROR_STOP on
select format('create role kiln_app nologin') as stmt
  where not exists (select 1 from pg_roles where rolname = 'kiln_app') \gexec
select format('create role %I login password %L in role kiln_app', :'service_role', :'service_password')
  where not exists (select 1 from pg_roles where rolname = :'service_role') \gexec
