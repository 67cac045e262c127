package main_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// keyDoc is a key as --json renders it; extra or missing fields fail the decode checks below.
type keyDoc struct {
	Tenant        string     `json:"tenant"`
	Actor         string     `json:"actor"`
	Key           string     `json:"key"`
	Operation     string     `json:"operation"`
	State         string     `json:"state"`
	RecoveryPoint string     `json:"recovery_point"`
	Attempts      int        `json:"attempts"`
	LockedUntil   *time.Time `json:"locked_until"`
	LastError     *string    `json:"last_error"`
	Response      *struct {
		Status int             `json:"status"`
		Body   json.RawMessage `json:"body"`
	} `json:"response"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

var keyFields = []string{"tenant", "actor", "key", "operation", "state", "recovery_point", "attempts",
	"locked_until", "last_error", "response", "created_at", "updated_at"}

func decodeKeys(t *testing.T, r result) []keyDoc {
	t.Helper()
	require.Equal(t, 0, r.code, r.String())
	var raw map[string][]map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &raw), r.stdout)
	require.Len(t, raw, 1, r.stdout)
	for _, k := range raw["keys"] {
		require.ElementsMatch(t, keyFields, mapKeys(k), r.stdout)
	}
	var doc struct{ Keys []keyDoc }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	require.NotNil(t, raw["keys"], "keys must be a list, also when empty: %s", r.stdout)
	return doc.Keys
}

func mapKeys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestKeys(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := "--database-url=" + w.db.URL

	empty := decodeKeys(t, pgsaga(t, nil, "keys", url, "--json"))
	require.Empty(t, empty)

	// A completed invoice (tenant a), a stuck payment (tenant b), a parked one (tenant b).
	w.invoice("tenant-a", 100)
	stuck, _ := w.stuckPayment("tenant-b", "bob")
	parked, _ := w.stuckPayment("tenant-b", "carol")
	w.exec(`UPDATE pgsaga_key SET status = 'failed', last_error = 'attempts exhausted (10): gateway down' WHERE key = $1`, parked)

	all := decodeKeys(t, pgsaga(t, nil, "keys", url, "--json"))
	require.Len(t, all, 5) // 3 invoices, 2 payments
	for i := 1; i < len(all); i++ {
		require.False(t, all[i].CreatedAt.After(all[i-1].CreatedAt), "newest first")
	}
	require.Equal(t, parked, all[0].Key)
	require.Equal(t, "failed", all[0].State)
	require.Equal(t, "payment_created", all[0].RecoveryPoint)
	require.NotNil(t, all[0].LastError)
	require.Contains(t, *all[0].LastError, "attempts exhausted")
	require.Nil(t, all[0].Response)
	// Each payment's invoice was created just before it.
	require.Equal(t, stuck, all[2].Key)
	require.Equal(t, "started", all[2].State)
	require.NotNil(t, all[2].LockedUntil)
	completed := all[4]
	require.Equal(t, "completed", completed.State)
	require.Equal(t, "create_invoice", completed.Operation)
	require.Equal(t, "finished", completed.RecoveryPoint)
	require.Equal(t, 1, completed.Attempts)
	require.NotNil(t, completed.Response)
	require.Equal(t, http.StatusCreated, completed.Response.Status)
	require.Contains(t, string(completed.Response.Body), `"status":"open"`, "the body is the stored JSON value")
	require.Nil(t, completed.LastError)

	stuckKeys := decodeKeys(t, pgsaga(t, nil, "keys", url, "--json", "--stuck"))
	require.Len(t, stuckKeys, 2)
	require.Equal(t, []string{parked, stuck}, []string{stuckKeys[0].Key, stuckKeys[1].Key})

	failed := decodeKeys(t, pgsaga(t, nil, "keys", url, "--json", "--state", "failed"))
	require.Len(t, failed, 1)
	require.Equal(t, parked, failed[0].Key)

	// A live lease is not stuck.
	w.exec(`UPDATE pgsaga_key SET locked_until = now() + interval '1 hour' WHERE key = $1`, stuck)
	stuckKeys = decodeKeys(t, pgsaga(t, nil, "keys", url, "--json", "--stuck"))
	require.Len(t, stuckKeys, 1)

	tenantA := decodeKeys(t, pgsaga(t, nil, "keys", url, "--json", "--tenant", "tenant-a"))
	require.Len(t, tenantA, 1)
	require.Equal(t, completed.Key, tenantA[0].Key)
	require.Equal(t, "tenant-a", tenantA[0].Tenant)
	require.Len(t, decodeKeys(t, pgsaga(t, nil, "keys", url, "--json", "--limit", "2")), 2)
	require.Len(t, decodeKeys(t, pgsaga(t, nil, "keys", url, "--json", "--limit", "0")), 5)

	// The table: a header, one aligned row per key, relative times.
	table := pgsaga(t, nil, "keys", url)
	require.Equal(t, 0, table.code, table.String())
	lines := strings.Split(strings.TrimRight(table.stdout, "\n"), "\n")
	require.Len(t, lines, 6, table.stdout)
	require.True(t, strings.HasPrefix(lines[0], "TENANT"), table.stdout)
	col := strings.Index(lines[0], "STATE")
	for _, l := range lines[1:] {
		require.Contains(t, []string{"started", "completed", "failed"}, strings.Fields(l[col:])[0], table.stdout)
	}
	require.Contains(t, table.stdout, "lease expires in ")
	require.Contains(t, table.stdout, "s ago")
}

func TestKeysBadUsage(t *testing.T) {
	t.Parallel()
	requireUsage(t, pgsaga(t, nil, "keys", "--database-url", "postgres://x@127.0.0.1:1/x", "--state", "stuck"), `invalid --state "stuck"`)
	requireUsage(t, pgsaga(t, nil, "keys", "--database-url", "postgres://x@127.0.0.1:1/x", "--limit", "-1"), "--limit")
	requireUsage(t, pgsaga(t, nil, "keys", "--database-url", "postgres://x@127.0.0.1:1/x", "--limit", "many"), "--limit")
}

func TestShow(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := "--database-url=" + w.db.URL
	key := uuid.NewString()
	status, body := w.post("t1", "alice", key, "/orders", `{"total": 1200}`)
	require.Equal(t, http.StatusCreated, status)

	r := pgsaga(t, nil, "show", url, "--tenant", "t1", "--actor", "alice", "--json", key)
	require.Equal(t, 0, r.code, r.String())
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &raw))
	require.ElementsMatch(t, append(keyFields, "calls", "parked_reason", "history"), mapKeys(raw))
	require.JSONEq(t, `[]`, string(raw["calls"]), "a single-transaction key makes no call")
	require.JSONEq(t, `null`, string(raw["parked_reason"]))
	require.JSONEq(t, `[]`, string(raw["history"]))
	var k keyDoc
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &k))
	require.Equal(t, keyDoc{Tenant: "t1", Actor: "alice", Key: key, Operation: "create_order", State: "completed",
		RecoveryPoint: "finished", Attempts: 1}, keyDoc{Tenant: k.Tenant, Actor: k.Actor, Key: k.Key,
		Operation: k.Operation, State: k.State, RecoveryPoint: k.RecoveryPoint, Attempts: k.Attempts})
	require.JSONEq(t, string(body), string(k.Response.Body))
	require.Equal(t, http.StatusCreated, k.Response.Status)
	require.WithinDuration(t, time.Now(), k.CreatedAt, time.Minute)

	human := pgsaga(t, nil, "show", url, "--tenant", "t1", "--actor", "alice", key)
	require.Equal(t, 0, human.code, human.String())
	for _, want := range []string{"state", "completed", "recovery point", "finished", "attempts", "lease",
		"last error", "201 Created", string(body)} {
		require.Contains(t, human.stdout, want)
	}

	// Another actor has no such key.
	r = pgsaga(t, nil, "show", url, "--tenant", "t1", "--actor", "bob", key)
	requireFailure(t, r, `pgsaga show: no key "`+key+`" for tenant t1 actor bob`)
}

func TestShowBadUsage(t *testing.T) {
	t.Parallel()
	url := "--database-url=postgres://x@127.0.0.1:1/x"
	requireUsage(t, pgsaga(t, nil, "show", url, "--actor", "a", "some-key-1"), "--tenant")
	requireUsage(t, pgsaga(t, nil, "show", url, "--tenant", "t", "some-key-1"), "--actor")
	requireUsage(t, pgsaga(t, nil, "show", url, "--tenant", "t", "--actor", "a"), "KEY")
	requireUsage(t, pgsaga(t, nil, "resume", url, "--actor", "a", "some-key-1"), "--tenant")
}
