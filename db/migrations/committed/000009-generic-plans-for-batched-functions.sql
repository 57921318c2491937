--! Previous: sha1:ab5114cc66556fe9323bace0b4442bf48d06dded
--! Hash: sha1:1c5bf402a995436a1348a0991bb63abd3aada038
--! Message: generic plans for batched functions

--! split: 1-current.sql
-- Stable plans for the batched (array-taking) hot-path functions.
--
-- A statement inside a function is planned anew on every call while Postgres judges a custom
-- plan cheaper than the generic one, and with array parameters it always does (a custom plan
-- knows the array's length). Re-planning the GET /usage join cost ≈0.6 ms per call, more than
-- the whole rest of the authorization. Every statement of these functions looks rows up by
-- primary or unique key, so the generic plan is the right one for any batch size; pinning it
-- makes each call execute a cached plan.

alter function kiln.authorize_requests(bytea[], text[], text[], int[], boolean[]) set plan_cache_mode = force_generic_plan;
alter function kiln_private.authorize_batch_locked(bytea[], text[], text[], int[], boolean[]) set plan_cache_mode = force_generic_plan;
alter function kiln.consume_rate_limits(text[], int[]) set plan_cache_mode = force_generic_plan;
alter function kiln.start_generations(bytea[], text, text[], text[], bigint[], jsonb[], bigint[], int) set plan_cache_mode = force_generic_plan;
alter function kiln.poll_generations(bytea[], int, uuid[], text) set plan_cache_mode = force_generic_plan;
alter function kiln.create_generations(uuid[], uuid[], uuid[], text[], text[], text[], bigint[], jsonb[], bigint[], int[]) set plan_cache_mode = force_generic_plan;
alter function kiln.get_generations(uuid[], uuid[], text[]) set plan_cache_mode = force_generic_plan;
alter function kiln_private.enqueue_workflow_outputs(uuid, text[], int) set plan_cache_mode = force_generic_plan;
alter function kiln_private.abandon_workflow_outputs(uuid, text[]) set plan_cache_mode = force_generic_plan;
