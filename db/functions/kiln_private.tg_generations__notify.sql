-- functions/kiln_private.tg_generations__notify.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_generations__notify.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_generations__notify()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_body json := kiln_private.generation_body(new);
begin
  if new.status in ('completed', 'failed') then
    perform kiln_private.drop_generation_stream(new.id);
  end if;
  -- NOTIFY payloads are limited to 8000 bytes: a large result is read by its waiters instead.
  if octet_length(v_body::text) <= 7000 then
    perform pg_notify('kiln_status', json_build_object('k', 'generation', 'id', new.id, 'a', new.account_id, 's', new.status, 'b', v_body)::text);
  else
    perform pg_notify('kiln_status', json_build_object('k', 'generation', 'id', new.id, 'a', new.account_id, 's', new.status)::text);
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_generations__notify() is 'Trigger: NOTIFY kiln_status with {k: generation, id, a: account, s: status} when a generation''s status changes, plus b, the generation''s body as the API reads it (kiln_private.generation_body), when that fits in 7000 bytes: waiters and event streams then answer without reading it. A generation that ends drops what it wrote while running (kiln_private.drop_generation_stream).';
