-- functions/kiln_private.uuid_v7_ordered.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.uuid_v7_ordered.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.uuid_v7_ordered(p_at timestamp with time zone DEFAULT clock_timestamp())
 RETURNS uuid
 LANGUAGE sql
 PARALLEL SAFE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- RFC 9562 version 7, method 3 of §6.2: 48 bits of Unix milliseconds, the version (7), then the
  -- sub-millisecond fraction in the 12 bits of rand_a (microseconds × 4096 / 1000), then
  -- gen_random_uuid()'s random bits and variant.
  select encode(
    overlay(
      overlay(uuid_send(gen_random_uuid())
              placing substring(int8send(floor(extract(epoch from p_at) * 1000)::bigint) from 3)
              from 1 for 6)
      placing int2send((28672 + ((floor(extract(epoch from p_at) * 1000000)::bigint % 1000) * 4096 / 1000))::int::smallint)
      from 7 for 2),
    'hex')::uuid;
$function$;
comment on function kiln_private.uuid_v7_ordered(timestamp with time zone) is 'A version 7 UUID whose 12 bits after the version hold the sub-millisecond time (RFC 9562 §6.2, method 3): ids made one after another sort in that order, to the microsecond.';
