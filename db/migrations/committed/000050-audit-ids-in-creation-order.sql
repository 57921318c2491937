--! Previous: sha1:3b69a2b88e3d175c8bdd7b15233eed23e4d59083
--! Hash: sha1:eaf92dd8d3cf3e6b8e2caaf43f7270d76f04c3a0
--! Message: Audit entries sort in the order they were made: ids with the sub-millisecond time (RFC 9562 method 3)

--! split: 1-current.sql
-- Audit entries sort in the order they were made: their ids carry the time to the microsecond.
-- kiln_private.uuid_v7 fills everything after the millisecond with random bits, so two entries
-- of one millisecond (a workspace and its owner's membership, say) could list in either order.

create or replace function kiln_private.uuid_v7_ordered(p_at timestamptz default clock_timestamp())
 returns uuid
 language sql
 volatile
 parallel safe
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
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

alter table kiln_private.audit_log alter column id set default kiln_private.uuid_v7_ordered();
