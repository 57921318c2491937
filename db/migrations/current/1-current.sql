--! Message: end-user caps refuse a workflow run up front
-- A run for an end user whose cap is used up is refused when it starts, as one whose budget is
-- (docs/usage.md, "Budgets per end user").
drop function if exists kiln_private.check_run_budget(uuid, uuid);
--! include functions/kiln_private.check_run_budget.sql
--! include functions/kiln.start_workflow_run.sql
--! include functions/kiln.retry_workflow_run.sql

-- GET /usage/daily reads through kiln.get_daily_usage_groups(_for_keys|_for_callers), with or
-- without groupBy: the ungrouped readers are gone.
drop function if exists kiln.get_daily_usage_for_keys(bytea[], integer, date[], date[]);
drop function if exists kiln.get_daily_usage_for_callers(uuid[], uuid[], date[], date[]);

-- GET /generations?metadata[k]=v: a keyset page read from a btree, not a GIN bitmap of every
-- matching generation sorted (docs/api.md, "Attribution"). One row per metadata pair, written
-- when the generation is (metadata never changes), gone with it.
create table if not exists kiln_private.generation_tags (
  generation_id uuid not null references kiln_private.generations (id) on delete cascade,
  account_id uuid not null,
  pool_id uuid not null,
  origin text not null,
  mkey text not null,
  mvalue text not null,
  created_at timestamptz not null,
  primary key (generation_id, mkey)
);
comment on table kiln_private.generation_tags is 'One row per metadata pair of a generation (kiln_private.tg_generations__tags), for GET /generations?metadata[k]=v in keyset order (generation_tags_list_idx).';
create index if not exists generation_tags_list_idx
  on kiln_private.generation_tags (account_id, pool_id, origin, mkey, mvalue, created_at, generation_id);
insert into kiln_private.generation_tags (generation_id, account_id, pool_id, origin, mkey, mvalue, created_at)
  select g.id, g.account_id, coalesce(g.workspace_id, g.account_id), g.origin, m.key, m.value, g.created_at
  from kiln_private.generations g cross join lateral jsonb_each_text(g.metadata) m
  where g.metadata is not null
  on conflict do nothing;
--! include functions/kiln_private.tg_generations__tags.sql
drop trigger if exists tg_generations__tags on kiln_private.generations;
create trigger tg_generations__tags after insert on kiln_private.generations
  referencing new table as new_rows for each statement execute function kiln_private.tg_generations__tags();
--! include functions/kiln.list_generations.sql
drop index if exists kiln_private.generations_metadata_idx;
