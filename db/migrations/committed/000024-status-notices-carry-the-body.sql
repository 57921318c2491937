--! Previous: sha1:07d3952ed6d5b14d1f10ade604e569e0b279e778
--! Hash: sha1:d9bf89bcbeb7781749d73423872759ced008c134
--! Message: Every status notice carries the generation body

--! split: 1-current.sql
-- Every status notice carries the generation's body (when it fits): an event stream sends its
-- `processing` event without a read too, so the terminal event never queues behind that read.

create or replace function kiln_private.tg_generations__notify() returns trigger
  language plpgsql security definer set search_path to 'pg_catalog', 'pg_temp'
as $$
declare
  v_body json := kiln_private.generation_body(new);
begin
  -- NOTIFY payloads are limited to 8000 bytes: a large result is read by its waiters instead.
  if octet_length(v_body::text) <= 7000 then
    perform pg_notify('kiln_status', json_build_object('k', 'generation', 'id', new.id, 'a', new.account_id, 's', new.status, 'b', v_body)::text);
  else
    perform pg_notify('kiln_status', json_build_object('k', 'generation', 'id', new.id, 'a', new.account_id, 's', new.status)::text);
  end if;
  return null;
end;
$$;
comment on function kiln_private.tg_generations__notify() is 'Trigger: NOTIFY kiln_status with {k: generation, id, a: account, s: status} when a generation''s status changes, plus b, the generation''s body as the API reads it (kiln_private.generation_body), when that fits in 7000 bytes: waiters and event streams then answer without reading it.';
