// Package stripe is a gateway.Gateway and gateway.Lister on Stripe's PaymentIntents API
// (stripe-go v85), usable against Stripe itself or stripe-mock.
//
// # Charging
//
// A charge is one PaymentIntent, created and confirmed in one call (confirm=true) with the
// derived downstream key as Stripe's Idempotency-Key, the reference in its metadata
// (metadata[reference]) and as its description, the configured PaymentMethod (and Customer),
// automatic capture, and payment methods that never redirect (automatic_payment_methods with
// allow_redirects=never): nobody is there to follow a redirect. For the same reason a charge is
// sent with error_on_requires_action (or off_session, Config.OffSession): a card that asks its
// holder to authenticate fails as a decline instead of waiting for a customer who is not there.
//
// The SDK's own network retries are off: every send is an attempt the caller (gateway.Execute)
// sees and classifies. A re-sent key within Stripe's key window (24 hours: Stripe may prune a key
// once it is that old, never sooner) returns the first answer instead of charging again. The
// idempotency layer compares a re-sent request with the first one, so Config must not change
// while keys are unresolved: a key re-sent with other parameters (or first used on another
// endpoint) is refused with an idempotency_error, which says the first request reached Stripe and
// may have charged, so it is unknown, never a refusal that lets the caller compensate.
//
// # Statuses
//
// Each PaymentIntent status is one class, whatever the path that reads it (the create answer,
// Get, the search after an unknown outcome, ListCharges):
//
//   - succeeded: succeeded. The money moved.
//   - processing: pending. Stripe is deciding (bank debits take days); it turns succeeded, or
//     requires_payment_method when the payment fails.
//   - requires_action, requires_confirmation, requires_capture: pending. Money may still move:
//     when the customer authenticates or verifies, when someone confirms, when someone captures.
//     This adapter sends what keeps its own PaymentIntents out of them (error_on_requires_action
//     or off_session, confirm=true, automatic capture), so one seen here waits for someone else.
//     Pending is the class that never sends the charge again and never compensates: Execute reads
//     it back until it is final, and parks it after ExecuteOpts.PendingWindow for an operator.
//   - requires_payment_method, canceled: declined. The attempt failed (a confirmed PaymentIntent
//     whose payment fails returns to requires_payment_method, or is canceled once it has been
//     confirmed too often), or it was canceled; no money moved and Stripe makes no further
//     attempt by itself.
//   - any other status: Unknown from Charge and Get (never taken for a verdict); listed
//     with Stripe's status as is.
//
// A decline usually comes back as an error (a card_error, 402) carrying the PaymentIntent: it
// is a declined Charge, with the PaymentIntent's id, not an error.
//
// # Outcomes Stripe cannot settle by replay
//
// Stripe saves a key's first answer and replays it for the key's life, a pending charge and a
// 500 included, so re-sending a key can settle neither: a pending charge is answered as
// gateway.StatusPending (gateway.Execute then reads it back by id with Get, never re-sending
// it), and a 5xx (or any answer whose outcome is unknown) is resolved by reading the
// PaymentIntent back by the reference in its metadata (Stripe's search). Search is eventually
// consistent (Stripe: usually under a minute, up to an hour during outages; not for
// read-after-write), so a PaymentIntent it finds settles the call while an empty answer proves
// nothing: the call stays unknown (Unknown; a later re-send of the key is a harmless replay
// followed by another search) until the PaymentIntent shows up or the key leaves its window
// (gateway.ErrCannotResolve: parked for an operator).
//
// For the same reason Inquiry is not offered: Capabilities.Inquiry promises an answer that is
// authoritative once MaxInFlight has passed, and an empty search is not, for as long as an hour.
// Inquire returns an error wrapping gateway.ErrUnsupported.
//
// # Reading back and listing
//
// Get retrieves a PaymentIntent by id. An id of the Charges API (ch_…) is retrieved from it
// (succeeded, failed as declined, pending): a call journal may hold one recorded by a charge made
// through that API, and a pending one is still followed to its end.
//
// ListCharges lists PaymentIntents created at or after a time (Stripe's list, which, unlike
// search, shows a PaymentIntent as soon as it is created), oldest first, a page at a time.
// Stripe lists newest first; collecting everything to reverse it would hold the whole period in
// memory before yielding the first one. Instead the adapter finds the newest PaymentIntent
// created before the time (one request) and pages towards the present from it with ending_before,
// which stripe-go's iterator turns into oldest-first order: one page in memory, and a
// PaymentIntent created while the listing runs is yielded at its end. When no PaymentIntent is
// older than the time, it first walks the list to its oldest (keeping one page) and pages forward
// from there. Stripe's created is in whole seconds, so the PaymentIntents of the second the time
// falls in are included. PaymentIntents of other integrations on the same account are listed too
// (their reference is empty unless they carry one); charges made through the Charges API are not
// listed.
package stripe
