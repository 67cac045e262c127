-- The key row made cheap to write and rewrite (the measurements are in
-- bench/perflab/FINDINGS.md). Every statement, index and trigger on pgsaga_key is paid by
-- every request.

-- The two CHECKs cost a sixth of PostgreSQL's CPU on every pgsaga path: PostgreSQL 15 parses and
-- plans each CHECK again for every INSERT and UPDATE of the table. The key store (package saga)
-- is the only writer of pgsaga_key: it checks a key's identity before any statement
-- (ValidateKey, Request's checks) and writes only the state machine's transitions. The same
-- invariants are asserted over every row at the end of the engine's, the payments example's and
-- sagatest's heavy tests (internal/dbtest.RequireKeyInvariants).
ALTER TABLE pgsaga_key DROP CONSTRAINT pgsaga_key_identity;
ALTER TABLE pgsaga_key DROP CONSTRAINT pgsaga_key_state_machine;

-- Likewise the call journal's CHECK on its outcome (7% of the backends' CPU on the phased path:
-- the claim inserts a journal row, the completion updates it). The engine writes only the five
-- outcome classes (a step that records another is journaled as unknown).
ALTER TABLE pgsaga_call DROP CONSTRAINT pgsaga_call_outcome;

-- NOTIFY only when someone waits. The trigger notified pgsaga_key_done on every completion,
-- and NOTIFY takes a lock at COMMIT that serialises commits. Now a duplicate that waits for an
-- execution in flight (Operation.WaitInFlight) sets waiters, after its LISTEN; the statement
-- that moves the key out of started (a completion, a park) notifies when waiters is set. The
-- flag and the completion serialise on the key's row lock, so a waiter either sees the key
-- still started (and is notified) or finds it finished.
DROP TRIGGER pgsaga_key_done ON pgsaga_key;
DROP FUNCTION pgsaga_key_notify_done();
ALTER TABLE pgsaga_key ADD COLUMN waiters boolean NOT NULL DEFAULT false;

-- Indexes: the primary key and the resumer's partial index, which the request path needs, plus
-- two that operators need and that no renewal writes (a write that changes an indexed column is
-- never a HOT update). updated_at, locked_until and expires_at, which every phase, renewal or
-- completion writes, are in no index any more.
DROP INDEX pgsaga_key_expires_idx;
DROP INDEX pgsaga_key_created_idx;
DROP INDEX pgsaga_key_failed_idx;

-- Newest-first listing and retention GC: created_at never changes and grows with the table,
-- and expires_at (set once, at completion) follows it, which a BRIN index summarises per range
-- of pages for a fraction of a B-tree's cost (no entry per row; a new row on a page not yet
-- summarised costs nothing). It finds the keys of a time window, not their order: a listing
-- looks at a recent window first and widens it (saga's listKeys), GC looks for expired keys.
CREATE INDEX pgsaga_key_age_brin ON pgsaga_key USING brin (created_at, expires_at);

-- Parked keys (few; operators list and count them), on a column no write changes.
CREATE INDEX pgsaga_key_parked_idx ON pgsaga_key (created_at) WHERE status = 'failed';
