-- functions/kiln.create_key.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.create_key.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.create_key(p_account_id uuid, p_workspace_id uuid, p_caller_scopes text[], p_key_hash bytea, p_display_prefix text, p_name text, p_scopes text[], p_rpm integer, p_budget_micros bigint, p_expires_at timestamp with time zone, p_require_end_user boolean DEFAULT false)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_key kiln_private.api_keys;
  v_extra text[];
begin
  select array_agg(s) into v_extra from unnest(p_scopes) s where not (s = any (coalesce(p_caller_scopes, '{}')));
  if v_extra is not null then
    raise exception 'a key cannot have scopes its creator lacks: %', array_to_string(v_extra, ', ') using errcode = 'KF001';
  end if;
  if p_expires_at is not null and p_expires_at <= now() then
    raise exception 'expiresAt must be in the future' using errcode = 'KI001';
  end if;
  perform 1 from kiln_private.accounts where id = p_account_id;
  if not found then
    raise exception 'account not found' using errcode = 'KN001';
  end if;
  if p_workspace_id is not null then
    -- Only a current owner or admin may bind a key to the workspace's pool.
    perform 1 from kiln_private.workspace_members
      where workspace_id = p_workspace_id and account_id = p_account_id
        and left_at is null and role in ('owner', 'admin');
    if not found then
      raise exception 'only a workspace owner or admin may create keys billed to it' using errcode = 'KF001';
    end if;
  end if;
  insert into kiln_private.api_keys (account_id, key_hash, display_prefix, scopes, rpm, workspace_id, name, budget_micros, expires_at, require_end_user)
    values (p_account_id, p_key_hash, p_display_prefix, p_scopes, p_rpm, p_workspace_id, p_name, p_budget_micros, p_expires_at,
            coalesce(p_require_end_user, false))
    returning * into v_key;
  return kiln_private.key_json(v_key, 0);
exception
  when check_violation then
    raise exception 'invalid key settings (scopes: one or more of read, write, keys, admin; rpm and budgetMicros positive; name up to 200 characters)' using errcode = 'KI001';
end;
$function$;
comment on function kiln.create_key(uuid,uuid,text[],bytea,text,text,text[],integer,bigint,timestamp with time zone,boolean) is 'POST /keys: a new key in the caller''s billing scope, its scopes within the caller''s (KF001), with an optional rpm, own budget per period and expiry, and whether its requests that spend must name an end user (p_require_end_user). Returns its list entry.';
