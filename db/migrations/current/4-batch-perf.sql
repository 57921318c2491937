-- Batches: accepted a chunk at a time in one transaction, each catalog entry stored once per batch
-- (docs/api.md, "Batches").
alter table kiln_private.batches add column if not exists models jsonb;
comment on column kiln_private.batches.models is 'The catalog entries its lines run with (batch-priced), by key: a line''s stored request names its model and fallbacks by these keys (kiln_private.batch_line_request). Null for batches whose lines hold their entries themselves.';

--! include functions/kiln_private.batch_line_request.sql
--! include functions/kiln.open_batch.sql
--! include functions/kiln.add_batch_lines.sql
--! include functions/kiln.close_batch.sql
--! include functions/kiln.start_generation.sql

-- Lines run in groups: one batch__run job starts, reserves and completes up to 10 lines of a
-- batch in one call each, and counts the batch once per group.
--! include functions/kiln_private.count_batch_lines.sql
--! include functions/kiln_private.dispatch_batches.sql
--! include functions/kiln.start_batch_lines.sql
--! include functions/kiln.complete_batch_lines.sql
--! include functions/kiln_private.tg_generations__batch.sql
--! include functions/kiln.sweep_workers.sql
