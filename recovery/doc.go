// Package recovery is pgsaga's lease-based resumer: it finds started keys whose lease expired and
// whose next attempt is due, takes their leases, and falls through their remaining phases. It
// needs no job queue; package worker runs it under River.
//
// Guarantees:
//
//   - No key is resumed by two resumers at once, in any number of processes. A batch is claimed
//     in one statement (FOR UPDATE SKIP LOCKED, so resumers never wait on each other) that writes
//     a fresh lease token; saga fences every later write of the key with that token, so a
//     resumer paused past its lease commits nothing once another took the key over.
//   - Retry: a resume that fails transiently leaves the key started; saga gives the lease back
//     and schedules the next attempt in SQL (next_attempt_at), so the delay survives restarts.
//     A claim counts as an attempt; when a key's attempts reach MaxAttempts, saga parks it as
//     failed, and the resumer leaves failed keys alone (an operator resumes them).
//   - Crash: a resumer killed mid-batch leaves its claimed keys started with a lease that
//     expires; the next pass of any resumer takes them again. Nothing is lost, and each phase
//     either committed with its recovery point or left nothing.
//   - Cancel: cancelling RunOnce's context stops it from starting further resumes, gives the
//     leases of claimed keys it has not started back at once, and waits for the resumes already
//     running (saga detaches them from the context so that no call is cut from the phase that
//     records it).
//   - Only keys of operations the client knows are claimed, so a resumer built with a subset of
//     the operations leaves the others to a resumer that has them.
package recovery
