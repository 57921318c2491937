-- functions/kiln.admin_set_model_enabled.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.admin_set_model_enabled.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.admin_set_model_enabled(p_admin_id uuid, p_model_id text, p_enabled boolean)
 RETURNS kiln_private.models
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_model kiln_private.models;
begin
  perform kiln_private.require_admin(p_admin_id);
  if p_enabled is null then
    raise exception 'enabled must be true or false' using errcode = 'KI001';
  end if;
  -- updated_at is the entry's price version: a generation priced from a cached entry before the
  -- change is refused (KS001) and priced again; a disabled entry is refused at once (KI001).
  update kiln_private.models set enabled = p_enabled, updated_at = now()
    where id = p_model_id and enabled is distinct from p_enabled
    returning * into v_model;
  if not found then
    select * into v_model from kiln_private.models where id = p_model_id;
    if not found then
      raise exception 'model not found' using errcode = 'KN001';
    end if;
  end if;
  return v_model;
end;
$function$;
comment on function kiln.admin_set_model_enabled(uuid,text,boolean) is 'PATCH /admin/models/{id}: enables or disables a catalog entry (audited as model.enabled / model.disabled by the models trigger; no entry when unchanged). KF001 unless an admin, KN001 unknown entry.';
