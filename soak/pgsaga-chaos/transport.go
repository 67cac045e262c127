package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// request is one HTTP request the clients sent, as the transport saw it.
type request struct {
	at       time.Time
	took     time.Duration
	serve    int // index of the serve it went to
	status   int // 0: no answer
	code     string
	replayed bool
	err      string
}

func (r request) String() string {
	out := fmt.Sprintf("serve-%d ", r.serve+1)
	switch {
	case r.status == 0:
		out += "no answer: " + r.err
	case r.code != "":
		out += fmt.Sprintf("%d %s", r.status, r.code)
	default:
		out += fmt.Sprint(r.status)
	}
	if r.replayed {
		out += " (replayed)"
	}
	return out + fmt.Sprintf(" after %s", r.took.Round(time.Millisecond))
}

// transport sends each of the clients' requests to one of the two serves, alternating between
// them for the attempts of one key, and records every request and answer: the figures by status,
// each key's requests for the evidence, and a first request answered as a replay. Each request
// carries its intent in its context (withIntent).
type transport struct {
	serves []*url.URL
	next   http.RoundTripper

	mu       sync.Mutex
	byScope  map[scope][]request
	byStatus map[string]int
	requests int
}

func newTransport(serveURLs []string) (*transport, error) {
	t := &transport{byScope: map[scope][]request{}, byStatus: map[string]int{},
		next: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}}
	for _, s := range serveURLs {
		u, err := url.Parse(s)
		if err != nil {
			return nil, err
		}
		t.serves = append(t.serves, u)
	}
	return t, nil
}

// placeholderBase is the clients' BaseURL; the transport sends each request to a real serve.
const placeholderBase = "http://serve.invalid"

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	it := intentOf(req.Context())
	if it == nil {
		return nil, errors.New("the harness sent a request without its intent") // a bug of the harness
	}
	sc := it.scope()
	t.mu.Lock()
	attempt := len(t.byScope[sc])
	t.byScope[sc] = append(t.byScope[sc], request{}) // reserves this attempt's slot
	t.mu.Unlock()
	serve := (attempt + int(keyHash(sc.String()))) % len(t.serves)
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.Host = t.serves[serve].Scheme, t.serves[serve].Host, ""
	it.markSent(time.Now())

	rec := request{at: time.Now(), serve: serve}
	resp, err := t.next.RoundTrip(out)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
	}
	rec.took = time.Since(rec.at)
	if err != nil {
		rec.err = err.Error()
		t.record(it, attempt, rec, noAnswerLabel(req.Context(), err))
		return nil, err
	}
	rec.status, rec.code = resp.StatusCode, field(body, "error")
	rec.replayed = strings.EqualFold(resp.Header.Get("Idempotent-Replayed"), "true")
	label := fmt.Sprint(rec.status)
	if rec.code != "" {
		label += " " + rec.code
	}
	if rec.replayed {
		label += " replayed"
	}
	t.record(it, attempt, rec, label)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// record files one request; an answer that finds the key parked stops its intent's
// submissions.
func (t *transport) record(it *intent, attempt int, rec request, label string) {
	if rec.code == "operation_parked" {
		it.markParked()
	}
	if attempt == 0 && rec.replayed && !it.double {
		it.markFirstReplayed()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byScope[it.scope()][attempt] = rec
	t.byStatus[label]++
	t.requests++
}

// requestsOf returns the requests of the key in sc, oldest first.
func (t *transport) requestsOf(sc scope) []request {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]request(nil), t.byScope[sc]...)
}

// noAnswerLabel names a request that got no answer: cancelled by the end of the run, timed out,
// or cut (a killed serve, a refused connection).
func noAnswerLabel(ctx context.Context, err error) string {
	switch {
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), errRunOver):
		return "no answer: run over"
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer: timed out"
	default:
		return "no answer: connection"
	}
}

// keyHash spreads the first attempts of the keys over the serves.
func keyHash(key string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return h.Sum32()
}

// figures returns the request count and the answers by label.
func (t *transport) figures() (int, map[string]int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int, len(t.byStatus))
	for k, v := range t.byStatus {
		out[k] = v
	}
	return t.requests, out
}

// longestGap returns the longest time between two consecutive requests answered 201 without
// being a replay (a new effect, a write on the database), by when the answers arrived before
// until (the end of the run: the clients stop then), among those gaps that overlap [from, to]:
// how long no client got a new 201 across an outage there. False when no gap does.
func (t *transport) longestGap(from, to, until time.Time) (time.Duration, bool) {
	t.mu.Lock()
	var ends []time.Time
	for _, reqs := range t.byScope {
		for _, q := range reqs {
			if end := q.at.Add(q.took); q.status == http.StatusCreated && !q.replayed && end.Before(until) {
				ends = append(ends, end)
			}
		}
	}
	t.mu.Unlock()
	slices.SortFunc(ends, time.Time.Compare)
	var longest time.Duration
	found := false
	for i := 1; i < len(ends); i++ {
		if ends[i].Before(from) || ends[i-1].After(to) {
			continue
		}
		found = true
		longest = max(longest, ends[i].Sub(ends[i-1]))
	}
	return longest, found
}

// createdBetween counts the requests answered 201 without being a replay between from and to.
func (t *transport) createdBetween(from, to time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, reqs := range t.byScope {
		for _, q := range reqs {
			if end := q.at.Add(q.took); q.status == http.StatusCreated && !q.replayed && !end.Before(from) && !end.After(to) {
				n++
			}
		}
	}
	return n
}
