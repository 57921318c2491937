-- functions/kiln_private.uuid_v7.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.uuid_v7.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.uuid_v7(p_at timestamp with time zone DEFAULT clock_timestamp())
 RETURNS uuid
 LANGUAGE sql
 PARALLEL SAFE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- RFC 9562 version 7: 48 bits of Unix milliseconds, then gen_random_uuid()'s random bits with
  -- the version nibble turned from 4 into 7 (bits 52 and 53 set); the variant bits stay as they are.
  select encode(set_bit(set_bit(
           overlay(uuid_send(gen_random_uuid())
                   placing substring(int8send(floor(extract(epoch from p_at) * 1000)::bigint) from 3)
                   from 1 for 6),
           52, 1), 53, 1), 'hex')::uuid;
$function$;
comment on function kiln_private.uuid_v7(timestamp with time zone) is 'A version 7 UUID (RFC 9562) for the time p_at (now by default): ordered by time to the millisecond, random after that. Used for ledger ids, so the primary key is appended to at its right end. (Postgres 18''s uuidv7() does the same; this works on older servers too.)';
