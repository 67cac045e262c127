package gateway

// DeriveKey returns the downstream idempotency key and reference for the object identified
// by id, such as DeriveKey("payment", paymentID) == "payment:<paymentID>".
//
// The result is a pure function of stored data (the prefix names the kind of object, id is
// its primary key), never of time or randomness: a request resumed after a crash, by a retry
// or by the worker, derives the same key and so cannot be charged twice by a provider that
// honours idempotency keys, and can be found again by inquiry.
//
// id must itself derive from the intent (phases.Run.IntentID), not be drawn at random in a
// phase: a database failover that loses the phase's commit forgets a random id, the client's
// retry runs the operation again with a new one, and the provider sees a new key.
func DeriveKey(prefix, id string) string {
	return prefix + ":" + id
}
