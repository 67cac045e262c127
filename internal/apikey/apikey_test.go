package apikey_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/apikey"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/saga"
)

func TestMain(m *testing.M) { dbtest.Main(m, nil) }

var alice = saga.Scope{Tenant: "tenant-1", Actor: "alice"}

func TestCreateVerifyListRevoke(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	s := apikey.NewStore(db.Pool)
	ctx := t.Context()

	first, err := s.Create(ctx, alice)
	require.NoError(t, err)
	require.Regexp(t, `^pgs_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$`, first.Secret)
	require.True(t, strings.HasPrefix(first.Secret, "pgs_"+first.ID+"_"))
	second, err := s.Create(ctx, saga.Scope{Tenant: "tenant-2", Actor: "bob"})
	require.NoError(t, err)

	scope, err := s.Verify(ctx, first.Secret)
	require.NoError(t, err)
	require.Equal(t, alice, scope)

	var stored []byte
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT secret_hash FROM pgsaga_api_key WHERE id = $1`, first.ID).Scan(&stored))
	require.Len(t, stored, 32, "a SHA-256 digest")
	require.NotContains(t, string(stored), first.Secret[len(first.Secret)-43:], "never the secret")

	all, err := s.List(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, []string{second.ID, first.ID}, []string{all[0].ID, all[1].ID}, "newest first")
	mine, err := s.List(ctx, &apikey.ListParams{Tenant: "tenant-1"})
	require.NoError(t, err)
	require.Len(t, mine, 1)
	require.Equal(t, first.ID, mine[0].ID)
	require.Nil(t, mine[0].RevokedAt)

	revoked, err := s.Revoke(ctx, first.ID)
	require.NoError(t, err)
	require.NotNil(t, revoked.RevokedAt)
	_, err = s.Verify(ctx, first.Secret)
	require.ErrorIs(t, err, apikey.ErrUnauthenticated, "a revoked key authenticates nothing from the commit on")
	again, err := s.Revoke(ctx, first.ID)
	require.NoError(t, err)
	require.Equal(t, revoked.RevokedAt.UnixMicro(), again.RevokedAt.UnixMicro(), "revoking twice keeps the first time")
	_, err = s.Revoke(ctx, "0000000000000000")
	require.ErrorIs(t, err, apikey.ErrNotFound)

	_, err = s.Verify(ctx, second.Secret)
	require.NoError(t, err, "other keys are untouched")
}

func TestCreateRefusesABadScope(t *testing.T) {
	t.Parallel()
	s := apikey.NewStore(failingDB{t})
	for _, scope := range []saga.Scope{{Tenant: "", Actor: "a"}, {Tenant: "t", Actor: ""},
		{Tenant: strings.Repeat("t", 65), Actor: "a"}, {Tenant: "t", Actor: "a\x00"}, {Tenant: "\xff", Actor: "a"}} {
		_, err := s.Create(t.Context(), scope)
		require.ErrorIs(t, err, apikey.ErrInvalidScope, "%q", scope)
	}
}

// A secret with the right id and a wrong secret part is refused; malformed secrets are refused
// without asking the database.
func TestVerifyRefusesWrongAndMalformedSecrets(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	k, err := apikey.NewStore(db.Pool).Create(t.Context(), alice)
	require.NoError(t, err)
	i := len(k.Secret) - 10 // inside the random part, away from its last character's padding bits
	forged := k.Secret[:i] + flip(k.Secret[i]) + k.Secret[i+1:]
	_, err = apikey.NewStore(db.Pool).Verify(t.Context(), forged)
	require.ErrorIs(t, err, apikey.ErrUnauthenticated)

	offline := apikey.NewStore(failingDB{t})
	for _, secret := range []string{"", "pgs_", k.Secret + "x", k.Secret[:len(k.Secret)-1],
		"xyz" + k.Secret[3:], strings.ToUpper(k.Secret[:20]) + k.Secret[20:],
		k.Secret[:20] + "-" + k.Secret[21:], // the separator after the id
		k.Secret[:len(k.Secret)-2] + "=="} {
		_, err := offline.Verify(t.Context(), secret)
		require.ErrorIs(t, err, apikey.ErrUnauthenticated, "%q", secret)
	}
}

// Scope reads the Bearer header; a database that cannot be reached is a transient error (503),
// not a 401 a client would give up on.
func TestScope(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	s := apikey.NewStore(db.Pool)
	k, err := s.Create(t.Context(), alice)
	require.NoError(t, err)
	for header, ok := range map[string]bool{
		"Bearer " + k.Secret: true,
		"bearer " + k.Secret: true,
		"":                   false,
		"Basic " + k.Secret:  false,
		"Bearer":             false,
		k.Secret:             false,
	} {
		r := httptest.NewRequest("POST", "/invoices", nil)
		r.Header.Set("Authorization", header)
		scope, err := s.Scope(r)
		if ok {
			require.NoError(t, err, header)
			require.Equal(t, alice, scope)
		} else {
			require.ErrorIs(t, err, apikey.ErrUnauthenticated, header)
		}
	}

	down, err := pgxpool.New(t.Context(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
	require.NoError(t, err)
	t.Cleanup(down.Close)
	r := httptest.NewRequest("POST", "/invoices", nil)
	r.Header.Set("Authorization", "Bearer "+k.Secret)
	_, err = apikey.NewStore(down).Scope(r)
	var transient *saga.TransientError
	require.ErrorAs(t, err, &transient)
	require.NotErrorIs(t, err, apikey.ErrUnauthenticated)
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

// failingDB fails the test on any use: the calls made with it must not reach a database.
type failingDB struct{ t *testing.T }

func (f failingDB) QueryRow(context.Context, string, ...any) pgx.Row {
	f.t.Fatal("the database was read")
	return nil
}

func (f failingDB) Query(context.Context, string, ...any) (pgx.Rows, error) {
	f.t.Fatal("the database was read")
	return nil, nil
}

func (f failingDB) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	f.t.Fatal("the database was written")
	return pgconn.CommandTag{}, nil
}
