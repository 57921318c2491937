--! Previous: sha1:6a757d9792a753813f6625850c1c967f26b9ca0a
--! Hash: sha1:143885089a6530f5e0f950f6adf4111f75436e82
--! Message: Providers fal, replicate, anthropic, gemini and fallback chains in the catalog

--! split: 1-providers.sql
-- More adapters (fal, replicate, anthropic, gemini) and fallback chains on catalog entries.

alter table kiln_private.models drop constraint if exists models_provider_check;
alter table kiln_private.models add constraint models_provider_check
  check (provider = any (array['local', 'openai', 'fal', 'replicate', 'anthropic', 'gemini']));

alter table kiln_private.models add column if not exists fallbacks text[] not null default '{}';
alter table kiln_private.models drop constraint if exists models_fallbacks_check;
alter table kiln_private.models add constraint models_fallbacks_check
  check (cardinality(fallbacks) <= 5 and not (id = any (fallbacks)));
comment on column kiln_private.models.fallbacks is
  'Catalog ids tried in order when this entry''s upstream fails after its retries (429, 5xx, timeout, network); same category. Content errors do not fall back.';

create or replace view kiln.models as
 select id, name, description, category, provider, upstream, supports_image_input, input_modalities,
        output_modalities, cost, max_output_tokens, markup, enabled, sort_order, updated_at, fallbacks
   from kiln_private.models;
comment on view kiln.models is 'The model catalog (upstream cost; billed price = cost × markup).';

create or replace function kiln.upsert_model(p_model jsonb) returns kiln_private.models
  language plpgsql security definer set search_path to 'pg_catalog', 'pg_temp'
as $$
declare
  v_model kiln_private.models;
begin
  insert into kiln_private.models as m
    (id, name, description, category, provider, upstream, supports_image_input, input_modalities,
     output_modalities, cost, max_output_tokens, markup, enabled, sort_order, fallbacks)
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
    coalesce(array(select jsonb_array_elements_text(p_model->'fallbacks')), '{}'))
  on conflict (id) do update set
    name = excluded.name, description = excluded.description, category = excluded.category,
    provider = excluded.provider, upstream = excluded.upstream,
    supports_image_input = excluded.supports_image_input, input_modalities = excluded.input_modalities,
    output_modalities = excluded.output_modalities, cost = excluded.cost,
    max_output_tokens = excluded.max_output_tokens, markup = excluded.markup,
    enabled = excluded.enabled, sort_order = excluded.sort_order, fallbacks = excluded.fallbacks,
    updated_at = now()
  returning * into v_model;
  return v_model;
exception
  when check_violation or not_null_violation or invalid_text_representation then
    raise exception 'invalid model entry: %', sqlerrm using errcode = 'KI001';
end;
$$;
comment on function kiln.upsert_model(jsonb) is 'Inserts or replaces one catalog entry (validated again in the CLI).';
