-- functions/kiln_private.stream_notify.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.stream_notify.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.stream_notify(p_s kiln_private.generation_streams, p_offset integer, p_text text, p_what jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_len integer := char_length(coalesce(p_text, ''));
  v_at integer := 0;
  v_x jsonb;
begin
  -- NOTIFY payloads are limited to 8000 bytes: text goes in pieces of 1000 characters (at most
  -- 6000 bytes once escaped), each with its own offset, in order, in this one transaction.
  loop
    v_x := jsonb_build_object('e', p_s.session) || coalesce(p_what, '{}');
    if v_len > 0 then
      v_x := v_x || jsonb_build_object('o', p_offset + v_at, 't', substr(p_text, v_at + 1, 1000));
    end if;
    perform pg_notify('kiln_status', json_build_object('k', 'generation', 'id', p_s.generation_id, 'a', p_s.account_id, 'x', v_x)::text);
    if p_s.run_id is not null then
      perform pg_notify('kiln_status', json_build_object('k', 'run', 'id', p_s.run_id, 'a', p_s.account_id, 'g', p_s.generation_id, 'x', v_x)::text);
    end if;
    v_at := v_at + 1000;
    p_what := null;
    exit when v_at >= v_len;
  end loop;
end;
$function$;
comment on function kiln_private.stream_notify(kiln_private.generation_streams,integer,text,jsonb) is 'NOTIFY kiln_status with what a streaming generation just wrote: {k: generation, id, a, x: {e: session, o: offset, t: text, c: cut, v: preview, g: progress}}, and the same as {k: run, id: run, g: generation, x} for a run output. Text goes in pieces of 1000 characters so every payload fits.';
