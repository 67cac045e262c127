// Package client submits requests to a pgsaga-backed API so that each user
// intent takes effect at most once on the server, however many times the
// network makes the client send it.
//
// The rule the package is built around: the idempotency key belongs to the
// intent, not to the attempt. [NewIntent] creates the key (a UUID v7) when the
// user decides; [Client.Submit] sends that same key on every attempt, and a
// [Queue] persists it with the intent before anything is sent.
//
// What happens on retry: [Client.Submit] retries network errors, timeouts,
// 5xx, 429 and 409 request_in_progress, with exponential backoff and full
// jitter ([FullJitter]), honouring Retry-After, until an attempt or
// elapsed-time budget runs out. It never retries 400, 401, 402, 404, 422 or
// any other 4xx: those answers are definitive and come back as a
// [*RejectedError]. When the budget runs out the error is an
// [*OutcomeUnknownError]: the request may or may not have taken effect, and the
// only safe next step is to submit the same intent again, later, with the
// same key.
//
// What happens on replay: when the server has already completed the intent it
// answers with the original status and body plus Idempotent-Replayed: true;
// [Result.Replayed] reports it. A replay is a success like any other.
//
// What happens on crash: [Queue.Enqueue] returns only after the intent and its
// key are committed to disk (bbolt fsyncs every commit). [Queue.Flush] removes
// an intent only after a definitive answer is committed, so a process killed
// at any moment (even with kill -9, between the server's answer and the
// removal) leaves the intent queued with its key. Running Flush again
// resubmits it with the same key and the server de-duplicates it: the effect
// happens once, and the client reads the stored response as a replay.
//
// What happens on cancel: cancelling the context stops Submit and Flush
// promptly. If a request had already been sent its outcome is unknown
// (the error is an [*OutcomeUnknownError] that wraps the context's error) and the
// intent stays queued; nothing is ever dropped because of a cancel.
package client
