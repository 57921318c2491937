--! Previous: sha1:eaf92dd8d3cf3e6b8e2caaf43f7270d76f04c3a0
--! Hash: sha1:1adf8c50762887942aa7ff91bba545a17ddd90ce
--! Message: The audit log indexed by scope, action and id, for GET /audit?action=

--! split: 1-current.sql
-- GET /audit?action=… reads a scope's entries of one action newest first: its own index, so a
-- rare action in a long history costs what it returns, not every entry of the scope.
create index if not exists audit_log_scope_action_idx on kiln_private.audit_log (scope_id, action, id desc);
