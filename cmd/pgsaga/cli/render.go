package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/pgsaga/pgsaga/saga"
)

// keyJSON is a key as --json renders it (CONTRACT.md): times in RFC 3339 (UTC), locked_until,
// last_error and response null when there is none, the response body as the stored JSON value
// when it is JSON and as a string otherwise.
type keyJSON struct {
	Tenant        string        `json:"tenant"`
	Actor         string        `json:"actor"`
	Key           string        `json:"key"`
	Operation     string        `json:"operation"`
	State         string        `json:"state"`
	RecoveryPoint string        `json:"recovery_point"`
	Attempts      int           `json:"attempts"`
	LockedUntil   *time.Time    `json:"locked_until"`
	LastError     *string       `json:"last_error"`
	Response      *responseJSON `json:"response"`
	CreatedAt     time.Time     `json:"created_at"`
	UpdatedAt     time.Time     `json:"updated_at"`
}

// keyDetailJSON is a key as `show --json` renders it: keyJSON plus its calls, why it is parked
// and what operators did to it.
type keyDetailJSON struct {
	keyJSON
	ParkedReason *string      `json:"parked_reason"`
	Calls        []callJSON   `json:"calls"`
	History      []actionJSON `json:"history"`
}

type callJSON struct {
	Step       string     `json:"step"`
	Attempt    int        `json:"attempt"`
	Reference  *string    `json:"reference"`
	StartedAt  time.Time  `json:"started_at"`
	EndedAt    *time.Time `json:"ended_at"`
	Outcome    *string    `json:"outcome"`
	ProviderID *string    `json:"provider_id"`
}

type actionJSON struct {
	At        time.Time `json:"at"`
	By        string    `json:"by"`
	Action    string    `json:"action"`
	Outcome   *string   `json:"outcome"`
	Note      *string   `json:"note"`
	Reference *string   `json:"reference"`
}

func renderKeyDetail(k *saga.Key) keyDetailJSON {
	out := keyDetailJSON{keyJSON: renderKey(k), Calls: []callJSON{}, History: []actionJSON{}}
	out.ParkedReason = nullable(string(k.ParkedReason))
	for _, c := range k.Calls {
		call := callJSON{Step: c.Step, Attempt: c.Attempt, Reference: nullable(c.Reference), StartedAt: c.StartedAt.UTC(),
			Outcome: nullable(string(c.Outcome)), ProviderID: nullable(c.ProviderID)}
		if c.EndedAt != nil {
			t := c.EndedAt.UTC()
			call.EndedAt = &t
		}
		out.Calls = append(out.Calls, call)
	}
	for _, a := range k.History {
		out.History = append(out.History, actionJSON{At: a.At.UTC(), By: a.By, Action: string(a.Action),
			Outcome: nullable(string(a.Outcome)), Note: nullable(a.Note), Reference: nullable(a.Reference)})
	}
	return out
}

// nullable is s, or nil (JSON null) when s is empty.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type responseJSON struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

func renderKey(k *saga.Key) keyJSON {
	out := keyJSON{
		Tenant:        k.Scope.Tenant,
		Actor:         k.Scope.Actor,
		Key:           k.Key,
		Operation:     k.Operation,
		State:         string(k.Status),
		RecoveryPoint: k.RecoveryPoint,
		Attempts:      k.Attempts,
		CreatedAt:     k.CreatedAt.UTC(),
		UpdatedAt:     k.UpdatedAt.UTC(),
	}
	if k.LockedUntil != nil {
		t := k.LockedUntil.UTC()
		out.LockedUntil = &t
	}
	if k.LastError != "" {
		msg := k.LastError
		out.LastError = &msg
	}
	if k.Response != nil {
		r := renderResponse(k.Response)
		out.Response = &r
	}
	return out
}

// renderResponse is a stored response as --json renders it: {"status","body"}.
func renderResponse(r *saga.Response) responseJSON {
	return responseJSON{Status: r.Status, Body: bodyJSON(r.Body)}
}

// bodyJSON is body itself when it is JSON, else body as a JSON string.
func bodyJSON(body []byte) json.RawMessage {
	if len(body) > 0 && json.Valid(body) {
		return json.RawMessage(body)
	}
	s, _ := json.Marshal(string(body)) // a string always marshals
	return s
}

// writeJSON writes v as one JSON document on one line.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// ago is how long before now t was, in one unit: "42s ago", "3m ago", "5h ago", "2d ago".
func ago(now, t time.Time) string {
	return roughDuration(now.Sub(t)) + " ago"
}

// lease describes a key's lease relative to now: "expires in 12s", "expired 42s ago", or
// "none" when the key has no lease.
func lease(now time.Time, k *saga.Key) string {
	if k.LockedUntil == nil {
		return "none"
	}
	if k.LockedUntil.After(now) {
		return "expires in " + roughDuration(k.LockedUntil.Sub(now))
	}
	return "expired " + ago(now, *k.LockedUntil)
}

// roughDuration rounds d down to its largest unit: 42s, 3m, 5h, 2d.
func roughDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
}

// statusLine is "201 Created".
func statusLine(status int) string {
	return strings.TrimSpace(fmt.Sprintf("%d %s", status, http.StatusText(status)))
}

// truncate shortens s to n runes for a table cell, on one line.
func truncate(s string, n int) string {
	s = oneLine(s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// orDash is s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
