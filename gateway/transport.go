package gateway

import (
	"errors"
	"net"
)

// TransportError classifies a failure to get any answer from a provider, for adapters: the
// request was certainly not sent when no connection could be opened (refused, unreachable,
// unresolvable host), a RetryableError; any other failure (timeout, reset or closed
// connection, cancellation after dialling) may have followed the provider acting on it, an
// AmbiguousError.
func TransportError(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return &RetryableError{Err: err}
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return &RetryableError{Err: err}
	}
	return &AmbiguousError{Err: err}
}
