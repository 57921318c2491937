-- functions/kiln.upsert_model.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.upsert_model.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.upsert_model(p_model jsonb)
 RETURNS kiln_private.models
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_model kiln_private.models;
begin
  insert into kiln_private.models as m
    (id, name, description, category, provider, upstream, supports_image_input, input_modalities,
     output_modalities, cost, max_output_tokens, markup, enabled, sort_order, fallbacks, batch_markup)
  values (
    p_model->>'id', p_model->>'name', p_model->>'description', p_model->>'category', p_model->>'provider',
    p_model->'upstream',
    coalesce((p_model->>'supports_image_input')::boolean, false),
    coalesce(array(select jsonb_array_elements_text(p_model->'input_modalities')), array['text']),
    coalesce(array(select jsonb_array_elements_text(p_model->'output_modalities')), array['text']),
    p_model->'cost',
    (p_model->>'maxOutputTokens')::int,
    (p_model->>'markup')::numeric,
    coalesce((p_model->>'enabled')::boolean, true),
    coalesce((p_model->>'sort_order')::int, 100),
    coalesce(array(select jsonb_array_elements_text(p_model->'fallbacks')), '{}'),
    (p_model->>'batchMarkup')::numeric)
  on conflict (id) do update set
    name = excluded.name, description = excluded.description, category = excluded.category,
    provider = excluded.provider, upstream = excluded.upstream,
    supports_image_input = excluded.supports_image_input, input_modalities = excluded.input_modalities,
    output_modalities = excluded.output_modalities, cost = excluded.cost,
    max_output_tokens = excluded.max_output_tokens, markup = excluded.markup,
    enabled = excluded.enabled, sort_order = excluded.sort_order, fallbacks = excluded.fallbacks,
    batch_markup = excluded.batch_markup,
    updated_at = now()
  returning * into v_model;
  return v_model;
exception
  when check_violation or not_null_violation or invalid_text_representation then
    raise exception 'invalid model entry: %', sqlerrm using errcode = 'KI001';
end;
$function$;
comment on function kiln.upsert_model(jsonb) is 'Inserts or replaces one catalog entry (validated again in the CLI).';
