package cli

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/pgsaga/pgsaga/saga"
)

// How serve lets requests in. A request first has its body read, bounded in size (maxBody)
// and in time (the server's ReadTimeout, which cuts the connection), holding nothing but its
// connection: a client that trickles its body takes no slot from anyone. Only then does it
// take one of the in-flight slots (--max-in-flight), and only within its party's share
// (--max-in-flight-per-tenant): a party holding its share is answered 429 too_many_requests,
// the others keep being served; when every slot is taken, 503 temporarily_unavailable. Either
// refusal comes before the handler, so nothing of the request is stored.
//
// A party is who the request proves to be, as far as can be told without work: the tenant of
// an API key that authenticated before in this process (a digest of the secret is kept, see
// knownSecrets), with --insecure-scope-headers the tenant it names, or what the application
// says (Service.Party: a webhook whose signature verifies is its source). Anything else, an
// unknown key or no key at all, is the anonymous party, which has one share like any other:
// its requests are answered 401 after one lookup, so holding its share takes a flood.
//
// The share bounds a party's use of the pool too: a request holds at most one pooled
// connection at a time, and a duplicate that waits for the execution in flight holds none,
// so a party at its share holds at most that many connections.

// Error code of serve's answer to a party over its share.
const codeTooManyRequests = "too_many_requests"

// anonymousParty is the party of requests that prove no identity.
const anonymousParty = "anonymous"

// slotRetryAfter is the Retry-After of a request refused a slot: slots free up as requests
// finish, well within a second for most.
const slotRetryAfter = 1

// fairSlots are the in-flight slots, shared fairly between parties.
type fairSlots struct {
	total, share int

	mu    sync.Mutex
	inUse int
	held  map[string]int
}

func newFairSlots(total, share int) *fairSlots {
	return &fairSlots{total: total, share: min(max(share, 1), total), held: map[string]int{}}
}

// slotRefusal says why a request got no slot.
type slotRefusal int

const (
	slotGranted slotRefusal = iota
	// slotOverShare: its party holds its share.
	slotOverShare
	// slotsFull: every slot is taken, by parties within their shares.
	slotsFull
)

// take takes a slot for party; release gives it back (call it once).
func (s *fairSlots) take(party string) (release func(), refusal slotRefusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.held[party] >= s.share:
		return nil, slotOverShare
	case s.inUse >= s.total:
		return nil, slotsFull
	}
	s.inUse++
	s.held[party]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.inUse--
		if s.held[party]--; s.held[party] == 0 {
			delete(s.held, party)
		}
	}, slotGranted
}

// admission is serve's front door (see above).
type admission struct {
	next    http.Handler
	slots   *fairSlots
	maxBody int64
	// party names a request's party from its headers and its whole body; "" is anonymous.
	party func(r *http.Request, body []byte) string
}

func (a *admission) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, whole := readBody(r, a.maxBody)
	party := anonymousParty
	if whole {
		if p := a.party(r, body); p != "" {
			party = p
		}
	}
	release, refusal := a.slots.take(party)
	switch refusal {
	case slotOverShare:
		w.Header().Set("Retry-After", strconv.Itoa(slotRetryAfter))
		saga.WriteError(w, http.StatusTooManyRequests, codeTooManyRequests,
			fmt.Sprintf("this tenant has %d requests in flight, its share of the server; retry with the same Idempotency-Key", a.slots.share))
		return
	case slotsFull:
		w.Header().Set("Retry-After", strconv.Itoa(slotRetryAfter))
		saga.WriteError(w, http.StatusServiceUnavailable, saga.CodeTemporarilyUnavailable,
			fmt.Sprintf("the server is handling its limit of %d requests; retry with the same Idempotency-Key", a.slots.total))
		return
	}
	defer release()
	a.next.ServeHTTP(w, r)
}

// readBody reads r's body into memory, at most limit+1 bytes, and puts it back for the handler.
// It reports the body and whether it was read whole: a body over limit leaves its rest unread
// (the handler's own limit answers 413 after authenticating), and a body whose reading failed
// (the client stopped sending, or the server's read timeout cut it) gives the handler the same
// error after the bytes that came.
func readBody(r *http.Request, limit int64) ([]byte, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r.Body, limit+1))
	body := buf.Bytes()
	switch {
	case err != nil:
		r.Body = readCloser{io.MultiReader(bytes.NewReader(body), errReader{err}), r.Body}
		return nil, false
	case n > limit:
		r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		return nil, false
	}
	r.Body = readCloser{bytes.NewReader(body), r.Body}
	return body, true
}

// readCloser reads from Reader and closes the request's own body.
type readCloser struct {
	io.Reader
	io.Closer
}

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
