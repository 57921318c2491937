-- functions/kiln.unlink_identity.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.unlink_identity.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.unlink_identity(p_issuer text, p_subject text)
 RETURNS kiln_private.identities
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.identities;
begin
  delete from kiln_private.identities where issuer = p_issuer and subject = p_subject returning * into v_row;
  if not found then
    raise exception 'identity not found' using errcode = 'KN001';
  end if;
  return v_row;
end;
$function$;
comment on function kiln.unlink_identity(text,text) is 'Removes an identity link; the next MCP tool call of that sign-in is refused as unlinked. KN001 when absent.';
