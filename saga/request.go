package saga

import (
	"errors"
)

// Request is one attempt to run an operation under an idempotency key.
type Request struct {
	// Scope owns the key; take it from authentication, never from the body.
	Scope Scope
	// Key is the client's idempotency key: 8-255 characters from '!' to '~', but '"' and '\'.
	Key string
	// Method and Path are those of the HTTP request (or any stable names for non-HTTP use). A key
	// reused with another method or path is rejected with ErrKeyReused.
	Method string
	Path   string
	// Body is the raw JSON request body. It is stored as sent, and fingerprinted canonically.
	Body []byte
	// PathValues are the wildcards of the route that matched Path and their values, which steps
	// read with phases.Run.PathValue. They are kept with the key, so that a resume reads them
	// too. Handler fills them in from the request's ServeMux pattern; they derive from Path,
	// which the fingerprint covers. Defaults to none.
	PathValues map[string]string

	// operation is the name of the operation running the request, set on the engine's own copy:
	// Run and RunTx never change the caller's Request.
	operation string
}

// checkRequest refuses what the database would refuse (text must be valid UTF-8 without NUL),
// before anything is sent, so that such a request is a clear error and not an outage.
func checkRequest(req *Request) error {
	if req == nil {
		return errors.New("saga: nil Request")
	}
	if err := validateKey(req.Key); err != nil {
		return err
	}
	if !storableText(req.Scope.Tenant, 64) || !storableText(req.Scope.Actor, 64) {
		return errors.New("saga: Request.Scope needs a tenant and an actor of 1-64 characters of valid UTF-8 without NUL")
	}
	if !storableText(req.Method, 64) || !storableText(req.Path, 2048) {
		return errors.New("saga: Request.Method and Request.Path are required (valid UTF-8 without NUL, a path of at most 2048 bytes)")
	}
	for name, value := range req.PathValues {
		if !storableText(name, 200) || (value != "" && !storableText(value, 2048)) {
			return errors.New("saga: Request.PathValues must be names of 1-200 bytes and values of at most 2048, valid UTF-8 without NUL")
		}
	}
	return nil
}

func storableText(s string, maxLen int) bool {
	return s != "" && len(s) <= maxLen && canStore(s)
}
