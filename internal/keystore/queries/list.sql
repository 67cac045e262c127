-- ListKeys lists keys newest first, filtered (an empty filter matches every key), after a keyset
-- cursor (with after: its created_at, tenant, actor and key), created at or after since. The
-- key table's index on created_at is a BRIN (a summary per range of pages, nearly free to
-- maintain), which finds the keys of a time window but cannot hand them out in order: a listing
-- looks at a recent window first and widens it only when the window holds less than a page.
-- name: ListKeys :many
SELECT sqlc.embed(pgsaga_key), coalesce(locked_until > clock_timestamp(), false)::boolean AS leased,
    clock_timestamp()::timestamptz AS db_now
FROM pgsaga_key
WHERE (@status::text = '' OR status = @status::text)
  AND (@operation::text = '' OR operation = @operation::text)
  AND (@tenant_id::text = '' OR tenant_id = @tenant_id::text)
  AND (NOT @stuck::boolean OR pgsaga_key_stuck(status, locked_until))
  AND (@key_prefix::text = '' OR starts_with(key, @key_prefix::text))
  AND (NOT @after::boolean OR (created_at, tenant_id, actor_id, key)
      < (@after_created_at::timestamptz, @after_tenant_id::text, @after_actor_id::text, @after_key::text))
  AND created_at >= @since::timestamptz
ORDER BY created_at DESC, tenant_id DESC, actor_id DESC, key DESC
LIMIT sqlc.arg(max_keys)::integer;

-- KeyDetail reads a key's call journal and history, oldest first.
-- name: KeyDetail :one
SELECT
    (SELECT coalesce(json_agg(json_build_object('step', c.step, 'attempt', c.attempt,
            'reference', c.reference, 'started_at', c.started_at, 'ended_at', c.ended_at, 'deadline', c.deadline,
            'max_in_flight_ms', c.max_in_flight_ms, 'outcome', c.outcome, 'provider_id', c.provider_id)
            ORDER BY c.started_at, c.attempt, c.step), '[]'::json)
     FROM pgsaga_call_journal c WHERE c.tenant_id = @tenant_id AND c.actor_id = @actor_id AND c.key = @key)::json AS calls,
    (SELECT coalesce(json_agg(json_build_object('at', a.at, 'by', a.by, 'action', a.action,
            'outcome', a.outcome, 'note', a.note, 'reference', a.reference) ORDER BY a.id), '[]'::json)
     FROM pgsaga_key_action a WHERE a.tenant_id = @tenant_id AND a.actor_id = @actor_id AND a.key = @key)::json AS history;

-- CallReferences finds the keys that journaled calls under any of the references, with the
-- provider ids their attempts recorded: per reference, an index scan of the key rows' entries
-- (pgsaga_key_call_reference_idx) and one of pgsaga_call's (pgsaga_call_reference_idx), then
-- each key by its primary key.
-- name: CallReferences :many
SELECT c.reference::text AS reference, c.tenant_id, c.actor_id, c.key, k.status,
    coalesce(array_agg(DISTINCT c.provider_id ORDER BY c.provider_id) FILTER (WHERE c.provider_id IS NOT NULL),
        '{}')::text[] AS provider_ids
FROM pgsaga_call_journal c
JOIN pgsaga_key k ON k.tenant_id = c.tenant_id AND k.actor_id = c.actor_id AND k.key = c.key
WHERE c.reference = ANY(@refs::text[])
GROUP BY c.reference, c.tenant_id, c.actor_id, c.key, k.status;
