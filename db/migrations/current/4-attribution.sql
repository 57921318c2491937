-- Attribution (docs/api.md, "Attribution"): the app's own end user and its tags, stored with the
-- generation, the workflow run and the charge, never changed after creation.
alter table kiln_private.generations
  add column if not exists end_user text,
  add column if not exists metadata jsonb;
alter table kiln_private.charges
  add column if not exists end_user text,
  add column if not exists metadata jsonb;
alter table kiln_private.workflow_runs
  add column if not exists end_user text,
  add column if not exists metadata jsonb;
-- A key that requires an end user on every request that spends (POST /keys requireEndUser).
alter table kiln_private.api_keys
  add column if not exists require_end_user boolean not null default false;
comment on column kiln_private.generations.end_user is 'The request''s endUser (the app''s own user id), or for a run output its run''s; null when not given. Never changed.';
comment on column kiln_private.generations.metadata is 'The request''s metadata (at most 16 string pairs), or for a run output its run''s; null when not given. Never changed.';
comment on column kiln_private.charges.end_user is 'The end user of the generation this charge bills (kiln_private.generations.end_user).';
comment on column kiln_private.charges.metadata is 'The metadata of the generation this charge bills (kiln_private.generations.metadata).';
comment on column kiln_private.workflow_runs.end_user is 'POST /workflows/{id}/runs endUser; its outputs inherit it.';
comment on column kiln_private.workflow_runs.metadata is 'POST /workflows/{id}/runs metadata; its outputs inherit it.';
comment on column kiln_private.api_keys.require_end_user is 'Requests that spend with this key must name an endUser (KI002 otherwise).';

-- GET /generations?endUser=: a keyset page per (type, status), as generations_list_idx serves the list.
create index if not exists generations_end_user_list_idx on kiln_private.generations
  (account_id, coalesce(workspace_id, account_id), origin, end_user, type, status, created_at, id) where end_user is not null;
-- GET /generations?metadata[k]=v: containment (metadata @> {k: v}).
create index if not exists generations_metadata_idx on kiln_private.generations using gin (metadata jsonb_path_ops) where metadata is not null;

--! include functions/kiln_private.generation_body.sql
--! include functions/kiln_private.insert_generations.sql
--! include functions/kiln.create_batch.sql
--! include functions/kiln.reserve_generation.sql
drop function if exists kiln.start_workflow_run(uuid, uuid, uuid, text, uuid, jsonb, jsonb, integer, integer);
--! include functions/kiln.start_workflow_run.sql
--! include functions/kiln.retry_workflow_run.sql
--! include functions/kiln.get_workflow_run.sql
drop function if exists kiln.list_generations_for_keys(bytea[], integer, text, integer[], timestamptz[], uuid[], text[], text[], text[], timestamptz[]);
drop function if exists kiln.list_generations_for_callers(uuid[], uuid[], text, integer[], timestamptz[], uuid[], text[], text[], text[], timestamptz[]);
drop function if exists kiln.list_generations(uuid, uuid, text, integer, timestamptz, uuid, text[], text[], text, timestamptz);
drop function if exists kiln.list_batch_generations(uuid, uuid, integer, timestamptz, uuid, text[], text[], text, timestamptz);
--! include functions/kiln.list_generations.sql
--! include functions/kiln.list_generations_for_keys.sql
--! include functions/kiln.list_generations_for_callers.sql
--! include functions/kiln.list_batch_generations.sql
drop function if exists kiln.create_key(uuid, uuid, text[], bytea, text, text, text[], integer, bigint, timestamptz);
--! include functions/kiln.create_key.sql
--! include functions/kiln_private.key_json.sql
--! include functions/kiln_private.tg_api_keys__audit.sql
-- Analysts read attribution per generation (docs/analysts.md); new columns go last, grants stay.
--! include views/kiln.generation_timings.sql
