--! Previous: sha1:25182536be6fabaa3eee7c08cec3f076191a1e12
--! Hash: sha1:509b3734dde133ca6a846cea423e0c66d0015a9d
--! Message: SSO sign-in transactions complete once; a sign-out is attributed to the session it ends

--! split: 1-current.sql
-- SSO sign-in for the console (issue 29): each sign-in transaction (its state) completes once, and
-- a sign-out is attributed to the session it ends.

create table if not exists kiln_private.sign_in_states (
  state_hash bytea primary key check (length(state_hash) = 32),
  expires_at timestamptz not null
);
comment on table kiln_private.sign_in_states is 'SSO sign-in transactions already completed (SHA-256 of their state), kept until the transaction would have expired anyway: a transaction cookie works once.';
create index if not exists sign_in_states_expires_idx on kiln_private.sign_in_states (expires_at);

create or replace function kiln.claim_sign_in(p_state_hash bytea, p_expires_at timestamptz)
returns boolean
language plpgsql
volatile
security definer
set search_path to pg_catalog, pg_temp
as $$
begin
  -- Expired claims go first: a transaction past its expiry is refused before it gets here.
  delete from kiln_private.sign_in_states where expires_at < now();
  insert into kiln_private.sign_in_states (state_hash, expires_at) values (p_state_hash, p_expires_at)
    on conflict (state_hash) do nothing;
  return found;
end;
$$;
comment on function kiln.claim_sign_in(bytea, timestamptz) is 'Marks an SSO sign-in transaction (the hash of its state) as completed, once: false when it already was (a replayed callback).';

create or replace function kiln.end_session(p_key_hash bytea)
returns boolean
language plpgsql
volatile
security definer
set search_path to pg_catalog, pg_temp
as $$
declare
  v_id uuid;
begin
  select k.id into v_id from kiln_private.api_keys k
    where k.key_hash = p_key_hash and k.kind = 'session' and k.revoked_at is null;
  if v_id is null then
    return false;
  end if;
  -- A sign-out acts as the session it ends (the request names only its address and id).
  perform set_config('kiln.actor', (coalesce(nullif(current_setting('kiln.actor', true), '')::jsonb, '{}')
    || jsonb_build_object('type', 'session', 'id', v_id))::text, true);
  update kiln_private.api_keys set revoked_at = now() where id = v_id and revoked_at is null;
  return found;
end;
$$;
comment on function kiln.end_session(bytea) is 'Sign-out: ends the session with this cookie hash (audited as session.deleted, by that session). False when there was none.';
