-- functions/kiln.stream_generation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.stream_generation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.stream_generation(p_id uuid, p_worker_id text, p_session integer, p_offset integer, p_text text, p_preview jsonb, p_progress jsonb)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_g kiln_private.generations;
  v_s kiln_private.generation_streams;
  v_text text := coalesce(p_text, '');
  v_what jsonb := '{}';
begin
  if p_preview is not null then
    v_what := v_what || jsonb_build_object('v', jsonb_build_object('i', (p_preview->>'i')::int, 'path', p_preview->>'path', 'type', p_preview->>'type'));
  end if;

  if p_session > 0 then
    -- A flush of the session this worker writes: appended only where the last one ended.
    update kiln_private.generation_streams s set
      text = s.text || v_text,
      chars = s.chars + char_length(v_text),
      preview_index = coalesce((p_preview->>'i')::int, s.preview_index),
      preview_path = coalesce(p_preview->>'path', s.preview_path),
      preview_type = coalesce(p_preview->>'type', s.preview_type),
      preview_paths = case when p_preview is null then s.preview_paths else s.preview_paths || (p_preview->>'path') end,
      progress_seq = s.progress_seq + (p_progress is not null)::int,
      progress_percent = case when p_progress is null then s.progress_percent else (p_progress->>'p')::smallint end,
      progress_message = case when p_progress is null then s.progress_message else p_progress->>'m' end,
      updated_at = now()
    where s.generation_id = p_id and s.session = p_session and s.chars = p_offset and not s.cut
    returning s.* into v_s;
    if not found then
      -- Lost (a restarted primary empties the table) or taken over: the worker begins again.
      return -1;
    end if;
  else
    -- A new session: only the worker the generation is processing under may begin one.
    select * into v_g from kiln_private.generations g where g.id = p_id;
    if not found or v_g.status <> 'processing' or v_g.worker_id is distinct from p_worker_id then
      return 0;
    end if;
    insert into kiln_private.generation_streams as s (generation_id, account_id, run_id, session, text, chars,
        preview_index, preview_path, preview_type, preview_paths, progress_seq, progress_percent, progress_message)
      values (p_id, v_g.account_id, v_g.run_id, greatest(1, 1 - p_session), v_text, char_length(v_text),
        (p_preview->>'i')::int, p_preview->>'path', p_preview->>'type',
        case when p_preview is null then '{}'::text[] else array[p_preview->>'path'] end,
        (p_progress is not null)::int, (p_progress->>'p')::smallint, p_progress->>'m')
    on conflict (generation_id) do update set
      session = greatest(s.session + 1, 1 - p_session), cut = false, text = excluded.text, chars = excluded.chars,
      preview_index = excluded.preview_index, preview_path = excluded.preview_path, preview_type = excluded.preview_type,
      preview_paths = s.preview_paths || excluded.preview_paths,
      progress_seq = excluded.progress_seq, progress_percent = excluded.progress_percent, progress_message = excluded.progress_message,
      updated_at = now()
    returning s.* into v_s;
    p_offset := 0;
  end if;

  if p_progress is not null then
    v_what := v_what || jsonb_build_object('g', jsonb_build_object('n', v_s.progress_seq, 'p', (p_progress->>'p')::smallint, 'm', p_progress->>'m'));
  end if;
  perform kiln_private.stream_notify(v_s, p_offset, v_text, v_what);
  return v_s.session;
end;
$function$;
comment on function kiln.stream_generation(uuid,text,integer,integer,text,jsonb,jsonb) is 'One coalesced flush of a running generation (docs/api.md, "Streaming"): with p_session 0 or -N, begins a session (the next after any earlier one, and after N: a worker that lost its row keeps counting) for the worker the generation is processing under, else returns 0; with the session it returned, appends p_text where the last flush ended (p_offset characters), else returns -1 (begin again). p_preview {i, path, type} is a partial image already stored; p_progress {p: percent, m: message}. NOTIFYs what it wrote (kiln_private.stream_notify) and returns the session.';
