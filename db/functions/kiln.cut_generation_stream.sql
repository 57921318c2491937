-- functions/kiln.cut_generation_stream.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.cut_generation_stream.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.cut_generation_stream(p_id uuid, p_worker_id text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_s kiln_private.generation_streams;
begin
  update kiln_private.generation_streams s set
    cut = true, text = '', chars = 0, preview_index = null, preview_path = null, preview_type = null,
    progress_seq = 0, progress_percent = null, progress_message = null, updated_at = now()
  from kiln_private.generations g
  where s.generation_id = p_id and g.id = p_id and not s.cut
    and (g.worker_id is not distinct from p_worker_id or g.status <> 'processing')
  returning s.* into v_s;
  if found then
    perform kiln_private.stream_notify(v_s, 0, null, jsonb_build_object('c', true));
  end if;
end;
$function$;
comment on function kiln.cut_generation_stream(uuid,text) is 'The execution streaming a generation failed and the generation will run again: its text so far is dropped and clients are told `reset` now, not when the next execution writes.';
