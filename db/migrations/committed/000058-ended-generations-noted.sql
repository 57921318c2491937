--! Previous: sha1:979dffdd5d1cfc91c052b68fd3ce8ab362c7ce69
--! Hash: sha1:7431a48ff09d7e4c3d284f7b94a39431766411a9
--! Message: Every generation that ends is noted for the process whose statement ended it

--! split: 1-current.sql
-- kiln_generations_total counts every generation that ends, in the process whose statement ended
-- it, however it ended: the worker failing its own, a run failing or expiring around its
-- not-started outputs, a sweep failing what no job can finish, a retry canceling what was still
-- in flight. Every failure goes through kiln_private.end_generation, which now notes the
-- generation (its type, model and how it ended) in a transaction-local setting;
-- kiln.take_ended_generations() hands the notes to the calling statement and forgets them. The
-- note is rolled back with whatever rolls back the end itself, and lives no longer than its
-- transaction.

create or replace function kiln_private.end_generation(p_id uuid, p_error text)
returns boolean
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  v_gen kiln_private.generations;
begin
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if not found or v_gen.status in ('completed', 'failed') then
    return false;
  end if;
  if v_gen.charge_id is not null then
    perform kiln.release_charge(v_gen.charge_id);
  end if;
  update kiln_private.generations
    set status = 'failed',
        error = left(coalesce(nullif(p_error, ''), 'generation failed'), 1000),
        waiting = false,
        finished_at = now(),
        updated_at = now()
    where id = p_id;
  -- One JSON object per line (json_build_object escapes newlines inside strings).
  perform set_config('kiln.ended_generations',
    coalesce(current_setting('kiln.ended_generations', true), '') ||
      json_build_object('type', v_gen.type, 'model_id', v_gen.model_id,
                        'status', case when p_error = 'canceled' then 'canceled' else 'failed' end)::text || E'\n',
    true);
  return true;
end;
$$;
comment on function kiln_private.end_generation(uuid,text) is 'Fails a generation and releases its reservation, nothing else (callers handle its run and slots); notes it for kiln.take_ended_generations. False when already settled.';

create or replace function kiln.take_ended_generations()
returns json
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v text := nullif(current_setting('kiln.ended_generations', true), '');
begin
  if v is null then
    return '[]'::json;
  end if;
  perform set_config('kiln.ended_generations', '', true);
  return ('[' || replace(rtrim(v, E'\n'), E'\n', ',') || ']')::json;
end;
$$;
comment on function kiln.take_ended_generations() is 'The generations ended (failed or canceled) in this transaction since the last call, each {type, model_id, status failed|canceled}, for the ending process''s kiln_generations_total; forgets them. Called in the same statement as the call that ended them (after it, from a materialized CTE).';
