-- views/kiln.usage_by_end_user.sql: the current definition. Edit it here, and ship the change with
-- `--! include views/kiln.usage_by_end_user.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

create or replace view kiln.usage_by_end_user as
 SELECT day,
    account_id,
    workspace_id,
    end_user,
    sum(charges)::bigint AS charges,
    sum(settled_charges)::bigint AS settled_charges,
    sum(released_charges)::bigint AS released_charges,
    sum(open_reservations)::bigint AS open_reservations,
    sum(spend_micros)::bigint AS spend_micros,
    sum(held_micros)::bigint AS held_micros,
    sum(batch_charges)::bigint AS batch_charges,
    sum(batch_spend_micros)::bigint AS batch_spend_micros,
    sum(batch_held_micros)::bigint AS batch_held_micros
   FROM ( SELECT r.day,
                CASE
                    WHEN r.workspace_id IS NULL THEN r.pool_id
                    ELSE NULL::uuid
                END AS account_id,
            r.workspace_id,
            r.end_user,
            r.charges,
            r.settled_charges,
            r.released_charges,
            0::bigint AS open_reservations,
            r.spend_micros,
            0::bigint AS held_micros,
            r.batch_charges,
            r.batch_spend_micros,
            0::bigint AS batch_held_micros
           FROM kiln_private.charge_end_user_days r
        UNION ALL
         SELECT (c.created_at AT TIME ZONE 'UTC'::text)::date AS day,
                CASE
                    WHEN c.workspace_id IS NULL THEN c.pool_id
                    ELSE NULL::uuid
                END AS account_id,
            c.workspace_id,
            c.end_user,
            1,
            0,
            0,
            1,
            0,
            c.reserved_micros,
            (c.batch_id IS NOT NULL)::integer AS int4,
            0,
                CASE
                    WHEN c.batch_id IS NOT NULL THEN c.reserved_micros
                    ELSE 0::bigint
                END AS "case"
           FROM kiln_private.charges c
          WHERE c.status = 'reserved'::text AND c.end_user IS NOT NULL) d
  GROUP BY day, account_id, workspace_id, end_user
 HAVING sum(charges) > 0::numeric;
comment on view kiln.usage_by_end_user is 'Spend per UTC day, billing scope and end user (the app''s endUser): account_id is the account of a personal budget (null for a Team pool''s rows), workspace_id the Team pool (null = personal budget). Charge counts by state, settled spend and still-held reservations in microdollars, and the batch part. Only charges with an end user; per day, the rest of kiln.daily_spend is the charges without one. Reads the kiln_private.charge_end_user_days rollup plus the open reservations (charges_open_idx).';
