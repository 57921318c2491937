--! Previous: sha1:65fcf643ffc25ef43a296adf214d8e38bd70548c
--! Hash: sha1:5a3578e8e99f0ca758bdce61e539efbf0b152b9c
--! Message: An unread ledger index goes: charges_pool_period_idx

--! split: 1-current.sql
-- charges_pool_period_idx (pool, period) goes: nothing reads the ledger by pool and period any
-- more. A pool's period totals are kiln_private.budget_periods, its days kiln_private.charge_days,
-- its open reservations charges_open_idx, and an analyst's time ranges
-- charges_account_created_idx or kiln.daily_spend. Every charge still paid for the index: one
-- more btree insert per reservation (69 MB at 10 million charges). No foreign key uses it.
drop index if exists kiln_private.charges_pool_period_idx;
