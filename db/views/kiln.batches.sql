-- views/kiln.batches.sql: the current definition. Edit it here, and ship the change with
-- `--! include views/kiln.batches.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

create or replace view kiln.batches as
 SELECT b.id,
    b.account_id,
    b.workspace_id,
    b.key_id,
    b.status,
    b.total,
    b.completed,
    b.failed,
    b.canceled,
    b.total - b.completed - b.failed - b.canceled AS unfinished,
    b.created_at,
    b.started_at,
    b.completed_at,
    b.expires_at,
    s.charges,
    s.settled_charges,
    s.released_charges,
    s.open_reservations,
    s.spend_micros,
    s.held_micros
   FROM kiln_private.batches b
     CROSS JOIN LATERAL ( SELECT count(*) AS charges,
            count(*) FILTER (WHERE c.status = 'settled'::text) AS settled_charges,
            count(*) FILTER (WHERE c.status = 'released'::text) AS released_charges,
            count(*) FILTER (WHERE c.status = 'reserved'::text) AS open_reservations,
            COALESCE(sum(c.settled_micros), 0::numeric)::bigint AS spend_micros,
            COALESCE(sum(c.reserved_micros) FILTER (WHERE c.status = 'reserved'::text), 0::numeric)::bigint AS held_micros
           FROM kiln_private.charges c
          WHERE c.batch_id = b.id) s;
comment on view kiln.batches is 'One row per batch (POST /batches): account, workspace (null = personal budget), API key, status (in_progress, completed, canceling, canceled, expired), line counts (total, completed, failed, canceled; unfinished = not ended yet), created/started/completed/expires times, and its spend from the ledger: charges of its lines by state, settled spend and still-held reservations, in microdollars. Lines reserve when they start, so lines never started have no charge.';
