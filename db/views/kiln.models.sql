-- views/kiln.models.sql: the current definition. Edit it here, and ship the change with
-- `--! include views/kiln.models.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

create or replace view kiln.models as
 SELECT id,
    name,
    description,
    category,
    provider,
    upstream,
    supports_image_input,
    input_modalities,
    output_modalities,
    cost,
    max_output_tokens,
    markup,
    enabled,
    sort_order,
    updated_at,
    fallbacks,
    batch_markup
   FROM kiln_private.models;
comment on view kiln.models is 'The model catalog (upstream cost; billed price = cost × markup; batch lines bill at batch_markup when set).';
