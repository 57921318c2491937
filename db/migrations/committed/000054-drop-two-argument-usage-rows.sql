--! Previous: sha1:026e0191f3b9ed07f25146f4c7f65cbf2f3b7741
--! Hash: sha1:083836dfba969b4a02c0db48ade4b50765519567
--! Message: The unused two-argument usage_rows is dropped

--! split: 1-current.sql
-- The two-argument body of GET /usage has had no caller since migration 000053 built the
-- three-argument one (with the key's fields) in one json_build_object: one body, not two.
drop function if exists kiln_private.usage_rows(uuid, uuid);
