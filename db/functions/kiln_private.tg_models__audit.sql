-- functions/kiln_private.tg_models__audit.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_models__audit.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_models__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_old jsonb;
  v_new jsonb;
  v_changed jsonb;
begin
  if tg_op = 'INSERT' then
    perform kiln_private.audit(null, 'model.created', 'model', new.id, jsonb_build_object('enabled', new.enabled, 'provider', new.provider));
    return null;
  elsif tg_op = 'DELETE' then
    perform kiln_private.audit(null, 'model.deleted', 'model', old.id, '{}');
    return null;
  end if;
  v_old := to_jsonb(old) - 'updated_at' - 'created_at';
  v_new := to_jsonb(new) - 'updated_at' - 'created_at';
  if v_old = v_new then
    return null;  -- a catalog import that changed nothing
  end if;
  select coalesce(jsonb_object_agg(n.key, jsonb_build_object('from', v_old->n.key, 'to', n.value)), '{}')
    into v_changed from jsonb_each(v_new) n where v_old->n.key is distinct from n.value;
  perform kiln_private.audit(null,
    case when old.enabled and not new.enabled then 'model.disabled' when new.enabled and not old.enabled then 'model.enabled' else 'model.updated' end,
    'model', new.id, v_changed);
  return null;
end;
$function$;
comment on function kiln_private.tg_models__audit() is 'Trigger: model.created / updated / enabled / disabled / deleted in the audit log (service-wide, scope null), with each changed field from → to; a write that changes nothing is not recorded.';
