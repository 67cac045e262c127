package operator_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/operator"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m, nil) }

func TestAddAuthenticateRevoke(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	s := operator.NewStore(db.Pool)
	ctx := t.Context()

	ana, anaToken, err := s.Add(ctx, "ana")
	require.NoError(t, err)
	require.Equal(t, "ana", ana.Name)
	require.Regexp(t, `^pgso_[A-Za-z0-9_-]{43}$`, anaToken, "32 random bytes")
	_, benToken, err := s.Add(ctx, "ben.k@ops")
	require.NoError(t, err)
	require.NotEqual(t, anaToken, benToken)

	_, _, err = s.Add(ctx, "ana")
	require.ErrorIs(t, err, operator.ErrNameTaken)
	for _, bad := range []string{"", "-ana", "ana smith", "ana\x1b[31m", strings.Repeat("a", 65)} {
		_, _, err = s.Add(ctx, bad)
		require.ErrorIs(t, err, operator.ErrInvalidName, "%q", bad)
	}

	name, err := s.Authenticate(ctx, anaToken)
	require.NoError(t, err)
	require.Equal(t, "ana", name)
	name, err = s.Authenticate(ctx, benToken)
	require.NoError(t, err)
	require.Equal(t, "ben.k@ops", name)
	for _, wrong := range []string{"", anaToken + "x", anaToken[:len(anaToken)-1], "pgso_"} {
		_, err = s.Authenticate(ctx, wrong)
		require.ErrorIs(t, err, operator.ErrUnknownToken, "%q", wrong)
	}

	var stored []byte
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT token_hash FROM pgsaga_operator WHERE name = 'ana'`).Scan(&stored))
	require.Equal(t, operator.Digest(anaToken), stored, "only the digest is stored")

	n, err := s.CountActive(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	revoked, err := s.Revoke(ctx, "ana")
	require.NoError(t, err)
	require.NotNil(t, revoked.RevokedAt)
	_, err = s.Authenticate(ctx, anaToken)
	require.ErrorIs(t, err, operator.ErrUnknownToken, "a revoked operator's token lets nobody in")
	active, err := s.Active(ctx, "ana")
	require.NoError(t, err)
	require.False(t, active)
	active, err = s.Active(ctx, "ben.k@ops")
	require.NoError(t, err)
	require.True(t, active)
	_, _, err = s.Add(ctx, "ana")
	require.ErrorIs(t, err, operator.ErrNameTaken, "a revoked name stays taken")
	_, err = s.Revoke(ctx, "nobody")
	require.ErrorIs(t, err, operator.ErrNotFound)

	all, err := s.List(ctx)
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, "ana", all[0].Name)
	require.NotNil(t, all[0].RevokedAt)
	require.Nil(t, all[1].RevokedAt)
	n, err = s.CountActive(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
}
