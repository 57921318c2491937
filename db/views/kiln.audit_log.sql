-- views/kiln.audit_log.sql: the current definition. Edit it here, and ship the change with
-- `--! include views/kiln.audit_log.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

create or replace view kiln.audit_log as
 SELECT id,
    at,
    scope_id,
    actor_type,
    actor_id,
    action,
    target_type,
    target_id,
    ip,
    request_id,
    details
   FROM kiln_private.audit_log l;
comment on view kiln.audit_log is 'Analysts: who changed what (keys, sessions, identity links, webhooks, workflows, accounts, workspaces, the catalog), one row per change, append-only. No secrets.';
