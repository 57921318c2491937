-- functions/kiln_private.duration_text.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.duration_text.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.duration_text(p_seconds integer)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select case
    when p_seconds % 86400 = 0 and p_seconds <> 0 then (p_seconds / 86400)::text || case when p_seconds = 86400 then ' day' else ' days' end
    when p_seconds % 3600 = 0 and p_seconds <> 0 then (p_seconds / 3600)::text || case when p_seconds = 3600 then ' hour' else ' hours' end
    when p_seconds % 60 = 0 and p_seconds <> 0 then (p_seconds / 60)::text || case when p_seconds = 60 then ' minute' else ' minutes' end
    else p_seconds::text || case when p_seconds = 1 then ' second' else ' seconds' end
  end;
$function$;
comment on function kiln_private.duration_text(integer) is 'A number of seconds in words, in the largest whole unit (432000 → ''5 days'', 5400 → ''90 minutes''), for messages a person reads.';
