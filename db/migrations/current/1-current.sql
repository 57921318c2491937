--! Message: Streaming outputs: the text so far, previews and progress of running generations

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

--! include functions/kiln_private.stream_notify.sql
--! include functions/kiln.stream_generation.sql
--! include functions/kiln.cut_generation_stream.sql
--! include functions/kiln.get_generation_stream.sql
--! include functions/kiln_private.drop_generation_stream.sql
--! include functions/kiln_private.tg_generations__notify.sql
--! include functions/kiln.get_run_streams.sql
