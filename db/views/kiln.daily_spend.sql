-- views/kiln.daily_spend.sql: the current definition. Edit it here, and ship the change with
-- `--! include views/kiln.daily_spend.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

create or replace view kiln.daily_spend as
 SELECT day,
    account_id,
    workspace_id,
    key_id,
    model_id,
    origin,
    sum(charges)::bigint AS charges,
    sum(settled_charges)::bigint AS settled_charges,
    sum(released_charges)::bigint AS released_charges,
    sum(open_reservations)::bigint AS open_reservations,
    sum(spend_micros)::bigint AS spend_micros,
    sum(held_micros)::bigint AS held_micros,
    sum(batch_charges)::bigint AS batch_charges,
    sum(batch_settled_charges)::bigint AS batch_settled_charges,
    sum(batch_released_charges)::bigint AS batch_released_charges,
    sum(batch_open_reservations)::bigint AS batch_open_reservations,
    sum(batch_spend_micros)::bigint AS batch_spend_micros,
    sum(batch_held_micros)::bigint AS batch_held_micros
   FROM ( SELECT r.day,
            r.account_id,
            r.workspace_id,
            r.key_id,
            r.model_id,
            r.origin,
            r.charges,
            r.settled_charges,
            r.released_charges,
            0::bigint AS open_reservations,
            r.spend_micros,
            0::bigint AS held_micros,
            r.batch_charges,
            r.batch_settled_charges,
            r.batch_released_charges,
            0::bigint AS batch_open_reservations,
            r.batch_spend_micros,
            0::bigint AS batch_held_micros
           FROM kiln_private.charge_days r
        UNION ALL
         SELECT (c.created_at AT TIME ZONE 'UTC'::text)::date AS timezone,
            c.account_id,
            c.workspace_id,
            c.key_id,
            c.model_id,
            c.origin,
            1,
            0,
            0,
            1,
            0,
            c.reserved_micros,
            (c.batch_id IS NOT NULL)::integer AS int4,
            0,
            0,
            (c.batch_id IS NOT NULL)::integer AS int4,
            0,
                CASE
                    WHEN c.batch_id IS NOT NULL THEN c.reserved_micros
                    ELSE 0::bigint
                END AS "case"
           FROM kiln_private.charges c
          WHERE c.status = 'reserved'::text) d
  GROUP BY day, account_id, workspace_id, key_id, model_id, origin
 HAVING sum(charges) > 0::numeric;
comment on view kiln.daily_spend is 'Ledger per UTC day, account, workspace (null = personal budget), API key (null = not a key), model and origin (api, mcp, app, workflow): charge counts by state, settled spend and still-held reservations, in microdollars, and the batch_* part of each (charges of batch lines; the rest is interactive). Reads the kiln_private.charge_days rollup plus the open reservations (charges_open_idx), so a filter on day or account costs what it returns.';
