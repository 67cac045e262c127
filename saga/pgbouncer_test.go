package saga_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// The tests named TestPgBouncer* run the engine through PgBouncer in transaction pooling mode
// (dbtest.PooledPool: fewer server connections than clients, so clients share them).

// pooledURLParams makes a pool through PgBouncer use the exec mode transaction pooling needs.
const pooledURLParams = "default_query_exec_mode=cache_describe"

// A duplicate of a request in flight waits for it and answers with its stored response, woken
// when it finishes: by polling when the client has nowhere to LISTEN, or by a notification on a
// direct connection beside the pooled one. A LISTEN through the pooler would never be woken:
// the duplicate would wait its whole WaitInFlight.
func TestPgBouncerDuplicateWaitsForInFlightRequest(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		listen bool
	}{
		{"polling", false},
		{"listening on a direct connection", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := dbtest.NewDB(t)
			_, err := db.Pool.Exec(t.Context(), createEffects)
			require.NoError(t, err)
			entered, release := make(chan struct{}, 1), make(chan struct{})
			cfg := &saga.Config{DB: db.PooledPool(t, pooledURLParams), TransactionPooling: true,
				Operations: []*phases.Operation{slowOperation(10*time.Second, entered, release)}}
			if c.listen {
				cfg.ListenDB = db.Pool
			}
			client, err := saga.NewClient(cfg)
			require.NoError(t, err)
			require.NoError(t, client.CheckListen(t.Context()))
			key := uuid.NewString()

			first := make(chan *saga.Result, 1)
			go func() {
				res, err := client.Run(context.Background(), "slow", request(key))
				if err != nil {
					t.Error(err)
				}
				first <- res
			}()
			<-entered
			second := make(chan *saga.Result, 1)
			go func() {
				res, err := client.Run(context.Background(), "slow", request(key))
				if err != nil {
					t.Error(err)
				}
				second <- res
			}()
			select {
			case <-second:
				t.Fatal("the duplicate answered before the first request finished")
			case <-time.After(200 * time.Millisecond):
			}
			close(release)
			released := time.Now()

			a, b := <-first, <-second
			require.Less(t, time.Since(released), 5*time.Second, "woken when the first finished, not at the end of its 10s wait")
			require.NotNil(t, a)
			require.NotNil(t, b)
			require.False(t, a.Replayed)
			require.True(t, b.Replayed, "the waiting duplicate answers with the stored response")
			require.Equal(t, a.Response.Body, b.Response.Body)
			require.Equal(t, 1, countEffects(t, db, key))
		})
	}
}

// A polling duplicate's wait stays bounded by WaitInFlight, as a listening one's.
func TestPgBouncerPollingWaitIsBounded(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	_, err := db.Pool.Exec(t.Context(), createEffects)
	require.NoError(t, err)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	c, err := saga.NewClient(&saga.Config{DB: db.PooledPool(t, pooledURLParams), TransactionPooling: true,
		Operations: []*phases.Operation{slowOperation(300*time.Millisecond, entered, release)}})
	require.NoError(t, err)
	key := uuid.NewString()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.Run(context.Background(), "slow", request(key))
	}()
	<-entered
	start := time.Now()
	_, err = c.Run(t.Context(), "slow", request(key))
	var inProgress *saga.InProgressError
	require.ErrorAs(t, err, &inProgress)
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	require.Positive(t, inProgress.LeaseRemaining)
	close(release)
	<-done
}

// CheckListen tells a session that hears notifications from one that never will: through a
// transaction pooler, a LISTEN is gone with the transaction that ran it.
func TestPgBouncerCheckListen(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	pooled := db.PooledPool(t, pooledURLParams)
	otherPooled := db.PooledPool(t, pooledURLParams)
	for _, c := range []struct {
		name string
		cfg  saga.Config
		ok   bool
	}{
		{"direct", saga.Config{DB: db.Pool}, true},
		{"pooled, declared, polling", saga.Config{DB: pooled, TransactionPooling: true}, true},
		{"pooled, declared, listening on a direct connection", saga.Config{DB: pooled, TransactionPooling: true, ListenDB: db.Pool}, true},
		{"pooled, not declared", saga.Config{DB: pooled}, false},
		{"pooled, declared, listening through the pooler", saga.Config{DB: pooled, TransactionPooling: true, ListenDB: otherPooled}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			client, err := saga.NewClient(&c.cfg)
			require.NoError(t, err)
			// Through the pooler no notification can come: a short deadline decides as well as
			// the default 5s.
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			err = client.CheckListen(ctx)
			if c.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, saga.ErrListenUnheard)
			require.ErrorContains(t, err, "transaction pooling")
		})
	}
}

// Database settings that cannot work are refused when the client is made, naming what to change.
func TestConfigRefusesPoolingThatCannotWork(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	pool := func(mode string) *pgxpool.Pool {
		cfg, err := pgxpool.ParseConfig(db.URL + "&default_query_exec_mode=" + mode)
		require.NoError(t, err)
		p, err := pgxpool.NewWithConfig(t.Context(), cfg) // connects on first use: never here
		require.NoError(t, err)
		t.Cleanup(p.Close)
		return p
	}
	describe := pool("cache_describe")
	for _, c := range []struct {
		name string
		cfg  saga.Config
		want string // "" when the config is accepted
	}{
		{"exec", saga.Config{DB: pool("exec")}, "pgx's exec mode, which sends JSON held in []byte as bytea"},
		{"simple protocol", saga.Config{DB: pool("simple_protocol")}, "pgx's simple_protocol mode"},
		{"transaction pooling with cache_statement", saga.Config{DB: pool("cache_statement"), TransactionPooling: true},
			"default_query_exec_mode=cache_describe in its URL), got cache_statement"},
		{"transaction pooling with describe_exec", saga.Config{DB: pool("describe_exec"), TransactionPooling: true},
			"got describe_exec"},
		{"transaction pooling listening on DB", saga.Config{DB: describe, TransactionPooling: true, ListenDB: describe},
			"Config.ListenDB is Config.DB"},
		{"transaction pooling with cache_describe", saga.Config{DB: describe, TransactionPooling: true}, ""},
		{"direct with describe_exec", saga.Config{DB: pool("describe_exec")}, ""},
		{"direct with cache_describe", saga.Config{DB: describe}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := saga.NewClient(&c.cfg)
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, c.want)
		})
	}
}
