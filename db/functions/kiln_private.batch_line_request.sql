-- functions/kiln_private.batch_line_request.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.batch_line_request.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.batch_line_request(p_request jsonb, p_models jsonb)
 RETURNS jsonb
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select case when jsonb_typeof(p_request->'model') is distinct from 'string' then p_request
    else p_request
      || jsonb_build_object('model', p_models->(p_request->>'model'))
      || case when jsonb_typeof(p_request->'fallbacks') = 'array' then jsonb_build_object('fallbacks',
           (select coalesce(jsonb_agg(p_models->f.k order by f.i), '[]'::jsonb)
              from jsonb_array_elements_text(p_request->'fallbacks') with ordinality as f(k, i)))
         else '{}'::jsonb end
  end;
$function$;
comment on function kiln_private.batch_line_request(jsonb,jsonb) is 'A batch line''s request as the worker executes it: its model and fallbacks, stored as keys of the batch''s models (kiln.add_batch_lines), replaced by the catalog entries they name. A request that holds its entries itself (a line made by kiln.create_batch) is returned as it is.';
