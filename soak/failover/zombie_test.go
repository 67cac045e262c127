package failover

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/saga"
)

// service is the payments API served in-process on a database of the cluster, its payment
// operation passing through chaos points.
type service struct {
	pool   *pgxpool.Pool
	sim    *sim.Simulator
	points *chaos.Points
	client *saga.Client
	url    string
}

func newService(t *testing.T, pool *pgxpool.Pool) *service {
	t.Helper()
	return newServiceWith(t, pool, sim.New(nil), 0)
}

// newServiceWith is newService on the simulator s, its executions under lease (0: the default).
func newServiceWith(t *testing.T, pool *pgxpool.Pool, s *sim.Simulator, lease time.Duration) *service {
	t.Helper()
	points := chaos.NewPoints()
	svc, err := payments.New(&payments.Config{Pool: pool, Gateway: chaos.WrapGateway(s.Gateway(), points)})
	require.NoError(t, err)
	client, err := saga.NewClient(&saga.Config{DB: pool, Lease: lease, Operations: chaos.WrapOperations(svc.Operations(), points)})
	require.NoError(t, err)
	plain, err := svc.Handler(saga.HeaderScope)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/", plain)
	h, err := client.Handler(payments.OpCreatePayment, &saga.HandlerOpts{Scope: saga.HeaderScope})
	require.NoError(t, err)
	mux.Handle("POST /payments", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(points.ReleaseAll)
	return &service{pool: pool, sim: s, points: points, client: client, url: srv.URL}
}

// invoice creates an invoice of amount and returns its id.
func (s *service) invoice(t *testing.T, amount int) string {
	t.Helper()
	a, err := post(s.url, "/invoices", uuid.NewString(), `{"amount": `+itoa(amount)+`, "currency": "USD"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, a.status, a.String())
	var inv struct{ ID string }
	require.NoError(t, json.Unmarshal(a.body, &inv))
	return inv.ID
}

// payUntilLastPhase sends the payment request (key, body) and returns once its execution reached
// its last phase (result_recorded), held there by gate until it is released; the request's answer
// comes on first.
func (s *service) payUntilLastPhase(t *testing.T, key, body string) (gate *chaos.Gate, first <-chan *answer) {
	t.Helper()
	gate = s.points.Block(chaos.AfterStep(payments.OpCreatePayment, "result_recorded"))
	answered := make(chan *answer, 1)
	go func() {
		a, err := post(s.url, "/payments", key, body)
		if err != nil {
			a = &answer{body: []byte(err.Error())}
		}
		answered <- a
	}()
	select {
	case <-gate.Reached():
	case <-time.After(30 * time.Second):
		t.Fatal("the payment did not reach its last phase")
	}
	return gate, answered
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// A primary cut off while an execution commits a key's last phase on it never acknowledges that
// commit once the standby has taken over, and the key is finished once, on the new primary:
//  1. the payment's last phase (result_recorded) has written on the primary and is about to
//     commit when the primary is partitioned; its COMMIT goes to the frozen node;
//  2. the standby is promoted;
//  3. the old primary's PostgreSQL is resumed, its Patroni still frozen: it believes it is the
//     primary and takes the COMMIT, which waits for its synchronous standby, gone;
//  4. its Patroni is resumed, finds the leader lock lost and demotes it: the waiting COMMIT fails,
//     and the request answers 503 (nothing of the old primary's commit anywhere);
//  5. the client's retry finishes the key on the new primary (asking the gateway, which already
//     charged): 201, one charge, one payment, replayed byte for byte, and the same on the old
//     primary once it is back as the standby.
func TestPartitionedPrimaryCannotCompleteAKey(t *testing.T) {
	healthyIn(t, true)
	_, pool := newDatabase(t)
	s := newService(t, pool)
	inv := s.invoice(t, 5000)
	key, body := uuid.NewString(), `{"invoice_id": "`+inv+`", "amount": 2000}`

	gate, first := s.payUntilLastPhase(t, key, body)
	require.Equal(t, 1, s.sim.TotalCharges(), "charged before the last phase")

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	part, err := cluster.PartitionPrimary(ctx)
	require.NoError(t, err)
	old := part.Node
	t.Cleanup(func() { _ = part.Heal() })
	gate.Release() // the key's write and the COMMIT go to the frozen primary
	begin := time.Now()
	next, err := cluster.WaitForPrimary(ctx, old)
	require.NoError(t, err)
	t.Logf("%s promoted %s after the partition of %s", next, time.Since(begin).Round(time.Millisecond), old)

	part.HealPostgres()
	waitUntil(t, 30*time.Second, "the COMMIT to wait for the synchronous standby on the old primary", func() bool {
		conn, err := pgx.Connect(ctx, old.URL("postgres"))
		if err != nil {
			return false
		}
		defer conn.Close(context.Background())
		var n int
		err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'`).Scan(&n)
		return err == nil && n > 0
	})
	select {
	case a := <-first:
		t.Fatalf("the request was answered while its COMMIT waited on the old primary: %s", a)
	default:
	}

	require.NoError(t, part.Heal())
	var zombie *answer
	select {
	case zombie = <-first:
	case <-time.After(time.Minute):
		t.Fatal("the request whose COMMIT waited on the demoted primary was not answered")
	}
	require.Equal(t, http.StatusServiceUnavailable, zombie.status, "the old primary's commit was not acknowledged: %s", zombie)
	require.Equal(t, "temporarily_unavailable", errorCode(t, zombie))

	// The retry, once due, finishes the key on the new primary.
	k, err := s.client.KeyGet(ctx, saga.Scope{Tenant: "t1", Actor: "alice"}, key)
	require.NoError(t, err)
	require.Equal(t, saga.KeyStatusStarted, k.Status)
	require.Nil(t, k.Response, "nothing of the old primary's commit")
	_, err = pool.Exec(ctx, `UPDATE pgsaga_key SET next_attempt_at = now() WHERE key = $1`, key)
	require.NoError(t, err)
	done, err := post(s.url, "/payments", key, body)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, done.status, done.String())
	var payment struct {
		ID       string `json:"id"`
		ChargeID string `json:"charge_id"`
	}
	require.NoError(t, json.Unmarshal(done.body, &payment))
	require.Equal(t, 1, s.sim.ChargesFor("payment:"+payment.ID), "charged once")
	require.Equal(t, 1, s.sim.TotalCharges())
	require.Equal(t, s.sim.Ledger().Charges[0].ID, payment.ChargeID)
	again, err := post(s.url, "/payments", key, body)
	require.NoError(t, err)
	require.Equal(t, done.status, again.status)
	require.Equal(t, done.body, again.body, "replayed byte for byte")
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))

	// The old primary comes back as the standby, rewound: one payment, the new primary's answer.
	_, standby, err := cluster.WaitHealthy(ctx)
	require.NoError(t, err)
	require.Equal(t, old, standby)
	waitUntil(t, 30*time.Second, "the old primary to hold the key as the new one does", func() bool {
		conn, err := pgx.Connect(ctx, standby.URL(pool.Config().ConnConfig.Database))
		if err != nil {
			return false
		}
		defer conn.Close(context.Background())
		var status string
		var stored []byte
		var n int
		err = conn.QueryRow(ctx, `SELECT k.status, k.response_body, (SELECT count(*) FROM payments)
			FROM pgsaga_key k WHERE k.key = $1`, key).Scan(&status, &stored, &n)
		return err == nil && status == "completed" && string(stored) == string(done.body) && n == 1
	})
}

// A COMMIT that went to a primary cut off from its standby, and that its execution gave up on
// when the phase's lease ran out, never shows on that primary, not even while the primary still
// believes it is one (its PostgreSQL resumed, its Patroni not yet): pgsaga's connections send no
// cancel request, which would end the COMMIT's wait for the standby with the key completed on
// the old primary, where a replay could read and answer it although the new primary never has it.
//  1. the payment's last phase (result_recorded) has written on the primary when it is
//     partitioned; its COMMIT goes to the frozen node;
//  2. the standby is promoted; the old primary's PostgreSQL is resumed, its Patroni still frozen:
//     the COMMIT waits for the synchronous standby, gone;
//  3. the phase's lease ends, and on the old primary the key stays started, never completed;
//  4. its Patroni is resumed and demotes it: the request answers 503, and the client's retry
//     finishes the key on the new primary, charged once.
func TestGivenUpCommitNeverShowsOnTheOldPrimary(t *testing.T) {
	healthyIn(t, true)
	_, pool := newDatabase(t)
	// Long enough to cover the partition's failover and the resumption of the old primary, so
	// that the COMMIT is waiting there when the lease ends.
	const lease = 15 * time.Second
	s := newServiceWith(t, pool, sim.New(nil), lease)
	inv := s.invoice(t, 5000)
	key, body := uuid.NewString(), `{"invoice_id": "`+inv+`", "amount": 2000}`

	gate, first := s.payUntilLastPhase(t, key, body)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	part, err := cluster.PartitionPrimary(ctx)
	require.NoError(t, err)
	old := part.Node
	t.Cleanup(func() { _ = part.Heal() })
	gate.Release()
	released := time.Now()
	next, err := cluster.WaitForPrimary(ctx, old)
	require.NoError(t, err)
	t.Logf("%s promoted %s after the partition of %s", next, time.Since(released).Round(time.Millisecond), old)
	require.Less(t, time.Since(released), lease-2*time.Second, "the failover outlasted the test's lease")

	part.HealPostgres()
	oldDB, err := pgx.Connect(ctx, old.URL(pool.Config().ConnConfig.Database))
	require.NoError(t, err)
	defer oldDB.Close(context.Background())
	oldStatus := func() string {
		var status string
		require.NoError(t, oldDB.QueryRow(ctx, `SELECT status FROM pgsaga_key WHERE key = $1`, key).Scan(&status))
		return status
	}
	waitUntil(t, 30*time.Second, "the COMMIT to wait for the synchronous standby on the old primary", func() bool {
		var n int
		err := oldDB.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'`).Scan(&n)
		return err == nil && n > 0
	})
	require.Equal(t, "started", oldStatus())

	// The lease ends while the COMMIT waits; from then on, for as long as the old primary
	// believes it is one, the key there is still started.
	time.Sleep(time.Until(released.Add(lease + time.Second)))
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		require.Equal(t, "started", oldStatus(), "the old primary never holds the given-up COMMIT's completion")
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, oldDB.Close(ctx))

	// Demoted, the old primary fails what still waited on it: the request answers 503.
	require.NoError(t, part.Heal())
	var givenUp *answer
	select {
	case givenUp = <-first:
	case <-time.After(time.Minute):
		t.Fatal("the request whose COMMIT waited on the demoted primary was not answered")
	}
	require.Equal(t, http.StatusServiceUnavailable, givenUp.status, givenUp.String())

	_, err = pool.Exec(ctx, `UPDATE pgsaga_key SET next_attempt_at = now() WHERE key = $1`, key)
	require.NoError(t, err)
	done, err := post(s.url, "/payments", key, body)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, done.status, done.String())
	require.Equal(t, 1, s.sim.TotalCharges(), "charged once")
	_, _, err = cluster.WaitHealthy(ctx)
	require.NoError(t, err)
}

func errorCode(t *testing.T, a *answer) string {
	t.Helper()
	var e struct{ Error string }
	require.NoError(t, json.Unmarshal(a.body, &e), a.String())
	return e.Error
}
