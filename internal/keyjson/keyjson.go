// Package keyjson is how operators' tools render keys as JSON: the shapes fixed for
// `keys --json`, `show --json`, `resume --json` and the console's JSON twins, and for the
// charges no key accounts for (`reconcile --json`, the console's unmatched charges). The CLI and
// the console both render through it, so a script reads the same document from either.
package keyjson

import (
	"encoding/json"
	"time"

	"github.com/pgsaga/pgsaga/saga"
)

// Key is a key as `keys --json` renders it: times in RFC 3339 (UTC), locked_until, last_error
// and response null when there is none, the response body as the stored JSON value when it is
// JSON and as a string otherwise.
type Key struct {
	Tenant        string     `json:"tenant"`
	Actor         string     `json:"actor"`
	Key           string     `json:"key"`
	Operation     string     `json:"operation"`
	State         string     `json:"state"`
	RecoveryPoint string     `json:"recovery_point"`
	Attempts      int        `json:"attempts"`
	LockedUntil   *time.Time `json:"locked_until"`
	LastError     *string    `json:"last_error"`
	Response      *Response  `json:"response"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

// Detail is a key as `show --json` renders it: Key plus its calls, why it is parked and what
// operators did to it. Calls and History are [] (never null) when there are none.
type Detail struct {
	Key
	ParkedReason *string  `json:"parked_reason"`
	Calls        []Call   `json:"calls"`
	History      []Action `json:"history"`
}

// Call is one external call attempt from the key's call journal. Outcome is null while the call
// is in flight or when its execution died before recording it.
type Call struct {
	Step       string     `json:"step"`
	Attempt    int        `json:"attempt"`
	Reference  *string    `json:"reference"`
	StartedAt  time.Time  `json:"started_at"`
	EndedAt    *time.Time `json:"ended_at"`
	Outcome    *string    `json:"outcome"`
	ProviderID *string    `json:"provider_id"`
}

// Action is an operator's action from the key's history.
type Action struct {
	At        time.Time `json:"at"`
	By        string    `json:"by"`
	Action    string    `json:"action"`
	Outcome   *string   `json:"outcome"`
	Note      *string   `json:"note"`
	Reference *string   `json:"reference"`
}

// Response is a stored response, and what `resume --json`, `settle --json` and the console's
// actions print: {"status","body"}.
type Response struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// FromKey renders k as Key.
func FromKey(k *saga.Key) Key {
	out := Key{
		Tenant:        k.Scope.Tenant,
		Actor:         k.Scope.Actor,
		Key:           k.Key,
		Operation:     k.Operation,
		State:         string(k.Status),
		RecoveryPoint: k.RecoveryPoint,
		Attempts:      k.Attempts,
		LockedUntil:   utc(k.LockedUntil),
		LastError:     nullable(k.LastError),
		Response:      FromResponse(k.Response),
		CreatedAt:     k.CreatedAt.UTC(),
		UpdatedAt:     k.UpdatedAt.UTC(),
	}
	return out
}

// DetailFromKey renders k, read with saga.Client.KeyGet (which fills its calls and history), as
// Detail.
func DetailFromKey(k *saga.Key) Detail {
	out := Detail{Key: FromKey(k), ParkedReason: nullable(string(k.ParkedReason)), Calls: []Call{}, History: []Action{}}
	for _, c := range k.Calls {
		out.Calls = append(out.Calls, Call{Step: c.Step, Attempt: c.Attempt, Reference: nullable(c.Reference),
			StartedAt: c.StartedAt.UTC(), EndedAt: utc(c.EndedAt), Outcome: nullable(string(c.Outcome)), ProviderID: nullable(c.ProviderID)})
	}
	for _, a := range k.History {
		out.History = append(out.History, Action{At: a.At.UTC(), By: a.By, Action: string(a.Action),
			Outcome: nullable(string(a.Outcome)), Note: nullable(a.Note), Reference: nullable(a.Reference)})
	}
	return out
}

// FromResponse renders a stored response, or nil (JSON null) when there is none.
func FromResponse(r *saga.Response) *Response {
	if r == nil {
		return nil
	}
	return &Response{Status: r.Status, Body: Body(r.Body)}
}

// Body is body itself when it is JSON, else body as a JSON string.
func Body(body []byte) json.RawMessage {
	if len(body) > 0 && json.Valid(body) {
		return json.RawMessage(body)
	}
	s, _ := json.Marshal(string(body)) // a string always marshals
	return s
}

// nullable is s, or nil (JSON null) when s is empty.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// utc is *t in UTC, or nil.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
