-- Batch lines keep flowing: a batch__run job that completes a group starts the next group of its
-- batch whose turn it is in the same call (kiln.complete_batch_lines, kiln_private.dispatch_batch_lines),
-- and a group reserves (kiln_private.reserve_budgets) and settles set-based (docs/api.md, "Batches").
drop function if exists kiln.start_batch_lines(uuid, integer, integer, text, bigint, integer, integer, integer);
drop function if exists kiln.complete_batch_lines(uuid, uuid[], jsonb, bigint[], text[], text[]);
--! include functions/kiln_private.dispatch_batch_lines.sql
