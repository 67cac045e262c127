package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pgsaga/pgsaga/internal/keyjson"
)

// cliKey is a key as `pgsaga keys --json` and `show --json` print it: keyjson's shapes, which
// the CLI renders through (keys --json leaves the fields of show's Detail empty).
type cliKey keyjson.Detail

func (k *cliKey) scope() scope { return scope{Tenant: k.Tenant, Actor: k.Actor, Key: k.Key.Key} }

// listKeys lists the run's keys (every tenant's) through `pgsaga keys --json`, every key when
// state is empty.
func (e *env) listKeys(ctx context.Context, state string) ([]cliKey, error) {
	args := []string{"keys", "--json", "--limit", "0"}
	if state != "" {
		args = append(args, "--state", state)
	}
	out, err := e.cli(ctx, args...)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Keys []cliKey `json:"keys"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("error decoding pgsaga keys --json: %w", err)
	}
	return doc.Keys, nil
}

// showKey reads one key with its calls and parked reason through `pgsaga show --json`, and
// returns the raw document too, for the evidence.
func (e *env) showKey(ctx context.Context, sc scope) (*cliKey, []byte, error) {
	out, err := e.cli(ctx, "show", "--json", "--tenant", sc.Tenant, "--actor", sc.Actor, sc.Key)
	if err != nil {
		return nil, out, err
	}
	var k cliKey
	if err := json.Unmarshal(out, &k); err != nil {
		return nil, out, fmt.Errorf("error decoding pgsaga show --json: %w", err)
	}
	return &k, out, nil
}

// reference is the downstream reference of a key's last call that has one; "" when none.
func (k *cliKey) reference() string {
	for i := len(k.Calls) - 1; i >= 0; i-- {
		if ref := orEmpty(k.Calls[i].Reference); ref != "" {
			return ref
		}
	}
	return ""
}

// orEmpty is *s, or "" for a JSON null.
func orEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
