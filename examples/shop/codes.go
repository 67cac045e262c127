package shop

// Error codes of the shop's own answers, stable for clients (the engine's are saga's Code
// constants: conflict for a second stock count of a shelf and day among them). Each is the
// "error" member, and the end of the "type", of a problem details body.
const (
	// CodeNotFound: no such product, order or resource for this tenant, whatever the id's
	// shape (404, stored when an operation answers it).
	CodeNotFound = "not_found"
	// CodeMethodNotAllowed: the path exists, not with this method (405; the Allow header lists
	// those it takes).
	CodeMethodNotAllowed = "method_not_allowed"
	// CodePriceChanged: the order's price is not the price list's; the order is held for
	// review, with the current price in the answer (409, stored, replayed).
	CodePriceChanged = "price_changed"
	// CodeOrderHeld: the order is held for review and cannot ship (409, stored).
	CodeOrderHeld = "order_held"
	// CodeOrderAlreadyShipped: the order shipped under another key (409, stored).
	CodeOrderAlreadyShipped = "order_already_shipped"
)
