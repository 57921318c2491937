--! Previous: sha1:39162a9f4c7698349f24a307797c0db0a5db8968
--! Hash: sha1:92001a398c54082a2edc8e373327c0ec9c87519a
--! Message: The generation list reads its index: a BRIN index replaces generations_created_idx

--! split: 1-current.sql
-- The generation list's probes read generations_list_idx, never a scan of the table's history.
--
-- generations_created_idx (a btree on created_at) offered the planner a second way to produce a
-- probe's newest-first order: scan every generation backwards and filter by account, scope,
-- origin, type and status. It costed that path from the average share of matching rows, so a
-- (type, status) pair with few or no rows — pending, or code for an image-heavy account — scanned
-- the whole table (12 ms at 10,000 generations, where generations_list_idx answers in 0.3 ms).
-- A BRIN index keeps time-range reads (analysts, retention) cheap on a table written in time
-- order, yields no order to choose it for, and costs a POST next to nothing.
drop index if exists kiln_private.generations_created_idx;
create index if not exists generations_created_brin on kiln_private.generations using brin (created_at);
