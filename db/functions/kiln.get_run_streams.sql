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
