package payments

// Error codes of the service's own answers, stable for clients (the engine's are saga's Code
// constants). Each is the "error" member, and the end of the "type", of a problem details body
// (saga.ProblemBody).
const (
	// CodeNotFound: no such invoice, order or resource for this tenant, whatever the id's shape.
	CodeNotFound = "not_found"
	// CodeMethodNotAllowed: the path exists, not with this method (the Allow header lists those
	// it takes).
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeAmountExceedsBalance: a payment above what the invoice still owes (stored, replayed).
	CodeAmountExceedsBalance = "amount_exceeds_balance"
	// CodeCardDeclined: the gateway declined the charge (402, stored, replayed).
	CodeCardDeclined = "card_declined"
	// CodePaymentFailed: an operator settled the parked payment as failed (402, stored).
	CodePaymentFailed = "payment_failed"
	// CodeOrderAlreadyCompleted: the order was completed under another key (409, stored).
	CodeOrderAlreadyCompleted = "order_already_completed"
	// CodeInvalidEventID: a webhook event's id is not 1-255 bytes of valid UTF-8 without control
	// characters (400).
	CodeInvalidEventID = "invalid_event_id"
)
