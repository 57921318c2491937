-- functions/kiln_private.end_user_spend.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.end_user_spend.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.end_user_spend(p_pool_id uuid, p_end_user text, p_since timestamp with time zone)
 RETURNS TABLE(settled_micros bigint, held_micros bigint)
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- An end user's charges of a pool since a time (charges_end_user_idx): what settled, and what
  -- open reservations hold.
  select coalesce(sum(c.settled_micros) filter (where c.status = 'settled'), 0)::bigint,
         coalesce(sum(c.reserved_micros) filter (where c.status = 'reserved'), 0)::bigint
  from kiln_private.charges c
  where c.pool_id = p_pool_id and c.end_user = p_end_user and c.created_at >= p_since;
$function$;
comment on function kiln_private.end_user_spend(uuid,text,timestamp with time zone) is 'What an end user''s charges of a pool created since p_since settled, and what its open reservations hold (charges_end_user_idx).';
