package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
)

// Request ids tie a client's answer to the log. serve and the console give every request an id,
// answered in X-Request-ID and attached (request_id) to every log line written with the
// request's context: an answer says what went wrong in words for people, and the detail (a
// driver's error, a stack of causes) is in the log under the id the client can quote.

// headerRequestID is the response header carrying the request's id.
const headerRequestID = "X-Request-ID"

type requestIDKey struct{}

// withRequestIDs gives each request an id (16 hex digits), in its context and its answer.
func withRequestIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 8)
		_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics if the system's source does)
		id := hex.EncodeToString(b)
		w.Header().Set(headerRequestID, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

// requestIDHandler adds the request's id to every record logged with its context.
type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, rec slog.Record) error {
	if id, ok := ctx.Value(requestIDKey{}).(string); ok {
		rec.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, rec)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
