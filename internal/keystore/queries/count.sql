-- CountKeys counts keys by operation and state, and the stuck ones (pgsaga_key_stuck), in one
-- pass.
-- name: CountKeys :many
SELECT operation, status, count(*) AS keys, count(*) FILTER (WHERE pgsaga_key_stuck(status, locked_until)) AS stuck
FROM pgsaga_key GROUP BY operation, status;

-- OldestStuck is the stuck key that has waited longest (by its last change).
-- name: OldestStuck :one
SELECT sqlc.embed(pgsaga_key), coalesce(locked_until > clock_timestamp(), false)::boolean AS leased,
    clock_timestamp()::timestamptz AS db_now
FROM pgsaga_key WHERE pgsaga_key_stuck(status, locked_until)
ORDER BY updated_at LIMIT 1;

-- EstimateKeys counts started and parked keys exactly (few, and indexed) and estimates the
-- completed ones from the planner's statistics, so that a metrics scrape never counts the table.
-- name: EstimateKeys :one
SELECT
    (SELECT count(*) FROM pgsaga_key WHERE status = 'started') AS started,
    (SELECT count(*) FROM pgsaga_key WHERE status = 'failed') AS parked,
    (SELECT count(*) FROM pgsaga_key WHERE pgsaga_key_stuck(status, locked_until)) AS stuck,
    (SELECT greatest(reltuples, 0)::bigint FROM pg_catalog.pg_class WHERE oid = 'pgsaga_key'::regclass) AS total;
