--! Previous: sha1:9a3bbc788f6de7b546e1ba6b0527c27469bc4a42
--! Hash: sha1:07d3952ed6d5b14d1f10ade604e569e0b279e778
--! Message: A terminal generation's notice carries its body

--! split: 1-current.sql
-- A terminal generation's notice carries its body: waiters and event streams answer from the
-- notice instead of reading the generation again (one read less per waiter per settlement).

create or replace function kiln_private.tg_generations__notify() returns trigger
  language plpgsql security definer set search_path to 'pg_catalog', 'pg_temp'
as $$
declare
  v_body json;
begin
  -- The status rides along so that a waiter for a terminal state can skip `processing` without a read.
  if new.status in ('completed', 'failed') then
    v_body := kiln_private.generation_body(new);
    -- NOTIFY payloads are limited to 8000 bytes: a large result is read by its waiters instead.
    if octet_length(v_body::text) <= 7000 then
      perform pg_notify('kiln_status', json_build_object('k', 'generation', 'id', new.id, 'a', new.account_id, 's', new.status, 'b', v_body)::text);
      return null;
    end if;
  end if;
  perform pg_notify('kiln_status', json_build_object('k', 'generation', 'id', new.id, 'a', new.account_id, 's', new.status)::text);
  return null;
end;
$$;
comment on function kiln_private.tg_generations__notify() is 'Trigger: NOTIFY kiln_status with {k: generation, id, a: account, s: status} when a generation''s status changes; a terminal status also carries b, the generation''s body as the API reads it (kiln_private.generation_body), when it fits in 7000 bytes.';
