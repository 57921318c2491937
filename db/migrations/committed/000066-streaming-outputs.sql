--! Previous: sha1:0eb9ac181cc399beb2c4e964dde41f02f7aff8b1
--! Hash: sha1:8d939bcd591ea0eebd4a96a1f037b406bd4d1697
--! Message: streaming outputs

--! split: 1-current.sql
-- What a running generation has written so far (docs/api.md, "Streaming"): working data beside
-- the job, never the record. UNLOGGED: no WAL per flush, and a crash of the primary empties it,
-- which the worker repairs at its next flush (it keeps the whole text). Rows go when the
-- generation ends (kiln_private.tg_generations__notify).
create unlogged table if not exists kiln_private.generation_streams (
  generation_id uuid primary key,
  account_id uuid not null,
  run_id uuid,
  -- The execution writing (1, 2, …): a new provider call after a cut-off one starts the next.
  session integer not null default 1,
  -- The session's execution was cut off and no newer one has written yet (clients were told `reset`).
  cut boolean not null default false,
  text text not null default '',
  chars integer not null default 0,
  preview_index integer,
  preview_path text,
  preview_type text,
  -- Every preview object of the generation, removed with the row.
  preview_paths text[] not null default '{}',
  progress_seq integer not null default 0,
  progress_percent smallint,
  progress_message text,
  updated_at timestamptz not null default now()
) with (fillfactor = 50);
create index if not exists generation_streams_run_id on kiln_private.generation_streams (run_id) where run_id is not null;

-- included from db/functions/kiln_private.stream_notify.sql
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
-- end of db/functions/kiln_private.stream_notify.sql
-- included from db/functions/kiln.stream_generation.sql
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
-- end of db/functions/kiln.stream_generation.sql
-- included from db/functions/kiln.cut_generation_stream.sql
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
-- end of db/functions/kiln.cut_generation_stream.sql
-- included from db/functions/kiln.get_generation_stream.sql
-- functions/kiln.get_generation_stream.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_generation_stream.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_generation_stream(p_account_id uuid, p_id uuid)
 RETURNS TABLE(session integer, cut boolean, text text, chars integer, preview_index integer, preview_path text, preview_type text, progress_seq integer, progress_percent smallint, progress_message text)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select s.session, s.cut, s.text, s.chars, s.preview_index, s.preview_path, s.preview_type, s.progress_seq, s.progress_percent, s.progress_message
  from kiln_private.generation_streams s
  where s.generation_id = p_id and s.account_id = p_account_id;
$function$;
comment on function kiln.get_generation_stream(uuid,uuid) is 'What a running generation of the account has written so far (no row: nothing yet, or it ended). The generation''s own read checks who may see it.';
-- end of db/functions/kiln.get_generation_stream.sql
-- included from db/functions/kiln_private.drop_generation_stream.sql
-- functions/kiln_private.drop_generation_stream.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.drop_generation_stream.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.drop_generation_stream(p_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_paths text[];
begin
  delete from kiln_private.generation_streams s where s.generation_id = p_id returning s.preview_paths into v_paths;
  if cardinality(v_paths) > 0 then
    -- Preview objects go with it; bucket bytes are left to the orphan sweep (docs/storage.md).
    with gone as (
      delete from kiln_private.objects o where o.path = any (v_paths) returning o.location
    )
    insert into kiln_private.object_intents (location)
      select g.location from gone g where g.location is not null
      on conflict do nothing;
  end if;
end;
$function$;
comment on function kiln_private.drop_generation_stream(uuid) is 'A generation ended: what it wrote while running (its row in generation_streams and its preview objects) is dropped. Called by kiln_private.tg_generations__notify.';
-- end of db/functions/kiln_private.drop_generation_stream.sql
-- included from db/functions/kiln_private.tg_generations__notify.sql
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
-- end of db/functions/kiln_private.tg_generations__notify.sql
-- included from db/functions/kiln.get_run_streams.sql
-- functions/kiln.get_run_streams.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_run_streams.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_run_streams(p_account_id uuid, p_run_id uuid)
 RETURNS TABLE(generation_id uuid, ordinal integer, prompt_node_id text, output_node_id text, session integer, cut boolean, text text, chars integer, preview_index integer, preview_path text, preview_type text, progress_seq integer, progress_percent smallint, progress_message text)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select s.generation_id, o.ordinal, o.prompt_node_id, o.output_node_id, s.session, s.cut, s.text, s.chars,
         s.preview_index, s.preview_path, s.preview_type, s.progress_seq, s.progress_percent, s.progress_message
  from kiln_private.generation_streams s
  join kiln_private.workflow_run_outputs o on o.generation_id = s.generation_id and o.run_id = p_run_id
  where s.run_id = p_run_id and s.account_id = p_account_id
  order by o.ordinal;
$function$;
comment on function kiln.get_run_streams(uuid,uuid) is 'What the outputs of a run of the account in flight have written so far (docs/api.md, "Streaming"), with their ordinal and node ids.';
-- end of db/functions/kiln.get_run_streams.sql
