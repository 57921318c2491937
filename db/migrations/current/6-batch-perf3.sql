-- A batch group's start is shorter in the account's serial section (docs/api.md, "Batches"): its
-- charges are inserted with their batch and metadata (kiln_private.reserve_budgets' optional
-- p_batch_ids and p_metadata), and its lines set `processing` and their charge in one update.
drop function if exists kiln_private.reserve_budgets(uuid[], uuid[], uuid[], text[], text[], bigint[], uuid[], uuid[], text[], text[]);
--! include functions/kiln_private.reserve_budgets.sql
