--! Previous: sha1:b281be526bf30d6bf2a14507c8e40a48f53e8216
--! Hash: sha1:a282e6f49edcbc4e40f177bfd706bff33dce1bd3
--! Message: A trial call without a verdict gives its lease back

--! split: 1-current.sql
-- A trial call that ends without a verdict (canceled, shut down, an input error) gives its lease
-- back at once, instead of keeping the upstream skipped for the rest of its lease.

create or replace function kiln.release_upstream_trial(p_model_id text) returns void
  language sql security definer set search_path to 'pg_catalog', 'pg_temp'
as $$
  update kiln_private.upstream_health set trial_until = null, updated_at = now()
  where model_id = p_model_id and trial_until is not null;
$$;
comment on function kiln.release_upstream_trial(text) is 'Gives back the trial lease of a catalog entry''s upstream when the trial call ended without telling whether the upstream works (canceled, shut down, an input error): the next claimer gets the trial.';
