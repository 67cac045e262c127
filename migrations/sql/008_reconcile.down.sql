DROP TABLE pgsaga_unmatched_charge;
DROP INDEX pgsaga_call_reference_idx;
