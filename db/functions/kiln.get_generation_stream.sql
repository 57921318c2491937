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
