--! Previous: sha1:5f115877d32f9649570b5f652fded60c48b9643b
--! Hash: sha1:032c8292706b7461c3d6898de8b04e475143491d
--! Message: A generation's body carries its prompt

--! split: 1-current.sql
-- A generation as the API reads it also says what was asked: its prompt, from the stored request.
-- A list of jobs (the console's gallery, `GET /generations`) can then tell them apart; until now
-- a client saw only ids, whose UUIDv7 time prefix is the same for jobs made within a minute.
-- Events recorded from now on carry it too (they store this body); older ones do not.
create or replace function kiln_private.generation_body(g kiln_private.generations) returns json
  language sql immutable set search_path to pg_catalog, pg_temp as $$
  select json_build_object(
    'id', g.id,
    'status', g.status,
    'type', g.type,
    'result', case when g.status = 'completed' then g.result end,
    'error', case when g.status = 'failed' then g.error end,
    'cost_micros', g.cost_micros,
    'prompt', g.request->>'prompt');
$$;
comment on function kiln_private.generation_body(kiln_private.generations) is 'A generation as the API reads it: id, status, type, result (completed), error (failed), billed cost and the request''s prompt.';
