package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestChaosShort is the soak's short version, for every `make test`: the real binary as two
// serve, two worker and gateway-sim processes, four clients of two tenants for 20s (some
// sending key strings another scope used), a fault every second on average (kill -9, zombies,
// database pauses of most of a lease, inquiry outages) and a PostgreSQL restart in the middle.
// It must end with no violation at all: no double charge, no lost intent, every answer true to
// the ledger and the tables.
func TestChaosShort(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a 35s soak of real processes; run without -short")
	}
	cfg := &Config{
		Duration:     20 * time.Second,
		Clients:      4,
		SharedKeys:   0.15,
		FaultEvery:   time.Second,
		WorkerDrain:  5 * time.Second,
		DrainTimeout: 2 * time.Minute,
		Dir:          t.TempDir(),
	}
	s, err := run(t.Context(), cfg)
	require.NoError(t, err)
	t.Logf("\n%s", s)
	if !s.pass() {
		violations, _ := os.ReadFile(filepath.Join(s.dir, "violations.txt"))
		timeline, _ := os.ReadFile(filepath.Join(s.dir, "timeline.log"))
		t.Logf("violations:\n%s\ntimeline:\n%s", violations, timeline)
	}
	require.Empty(t, s.verdict.violations, "violations (replay with the seed above)")
	require.Zero(t, s.verdict.doubleCharges)
	require.Zero(t, s.verdict.lost)

	// The run must have been the chaos it claims, or its passing says nothing.
	f := s.faults
	for name, n := range map[string]int64{"kill -9 serve": f.KillServe.Load(), "kill -9 worker": f.KillWorker.Load(),
		"zombie serve": f.FreezeServe.Load(), "zombie worker": f.FreezeWorker.Load(), "database pause": f.PausePG.Load(),
		"gateway inquiry outage": f.InquiryOff.Load()} {
		require.Positive(t, n, "no %s was injected", name)
	}
	require.EqualValues(t, 1, f.RestartPG.Load(), "PostgreSQL restarts")
	require.Positive(t, s.pendingSeen, "no charge was pending")
	require.Greater(t, len(s.completion), 20, "too few payments answered during the run to mean anything")
	require.Positive(t, s.sharedKeys, "no intent used a key string of another scope")
	require.FileExists(t, filepath.Join(s.dir, "evidence.json"))
	require.True(t, s.reconciled, "reconciliation did not run")
	require.Equal(t, s.charges, s.checked, "charges reconciliation checked")
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"lease under 1s", Config{Lease: 500 * time.Millisecond, PauseFor: 100 * time.Millisecond}, "Lease must be at least 1s"},
		{"pause as long as the lease", Config{Lease: 2 * time.Second, PauseFor: 2 * time.Second}, "PauseFor must be positive and shorter than Lease"},
		{"probability above 1", Config{Sim: SimFaults{Pending: 1.5}}, "Sim.Pending must be a probability"},
		{"worker drain past the drain", Config{WorkerDrain: 5 * time.Minute, DrainTimeout: time.Minute}, "WorkerDrain must be in"},
		{"unknown cluster", Config{Cluster: "patroni"}, "Cluster must be single, patroni-sync or patroni-async"},
		{"idempotency neither on nor off", Config{Sim: SimFaults{Idempotency: "true"}}, "Sim.Idempotency must be on or off"},
		{"pause past the leader lock", Config{Cluster: ClusterPatroniSync, Lease: 10 * time.Second, PauseFor: 6 * time.Second}, "PauseFor must be shorter than the Patroni leader lock's TTL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.ErrorContains(t, tc.cfg.WithDefaults().validate(), tc.want)
		})
	}
	require.NoError(t, (*Config)(nil).WithDefaults().validate())
	for _, c := range []string{ClusterSingle, ClusterPatroniSync, ClusterPatroniAsync} {
		require.NoError(t, (&Config{Cluster: c}).WithDefaults().validate(), c)
	}
	require.Equal(t, claimExact, (&Config{Cluster: ClusterPatroniSync}).WithDefaults().claim())
	require.Equal(t, claimMoney, (&Config{Cluster: ClusterPatroniAsync}).WithDefaults().claim())
	// An asynchronous pair's simulator honours keys, and its inquiry outages are then harmless;
	// without keys, an outage would leave a provider that can neither be asked nor de-duplicate.
	async := (&Config{Cluster: ClusterPatroniAsync}).WithDefaults()
	require.Equal(t, "on", async.Sim.Idempotency)
	require.Equal(t, 1500*time.Millisecond, async.InquiryOff)
	keyless := (&Config{Cluster: ClusterPatroniAsync, Sim: SimFaults{Idempotency: "off"}}).WithDefaults()
	require.Negative(t, keyless.InquiryOff)
	require.Equal(t, "off", (&Config{Cluster: ClusterPatroniSync}).WithDefaults().Sim.Idempotency)
}
