package saga_test

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/saga/sagaprom"
)

// counters reads every counter and the count of every histogram of g, by name and labels.
func counters(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			name := mf.GetName() + "{" + strings.Join(labels, ",") + "}"
			if h := m.GetHistogram(); h != nil {
				out[name] = float64(h.GetSampleCount())
				continue
			}
			out[name] = m.GetCounter().GetValue()
		}
	}
	return out
}

// metered is an operation whose call's outcome, and whose request's validity, the test decides.
type metered struct {
	call func(run *phases.Run) error
}

func (m *metered) ops(*harness) []*phases.Operation {
	return []*phases.Operation{{
		Name:     "metered",
		Validate: func(body []byte) error { return validIf(!strings.Contains(string(body), "bad")) },
		Steps: []phases.Step{
			phases.Atomic("prepared", func(context.Context, pgx.Tx, *phases.Run) error { return nil }),
			phases.Call("called", func(_ context.Context, run *phases.Run) error { return m.call(run) }),
			phases.Atomic("answered", func(_ context.Context, _ pgx.Tx, run *phases.Run) error {
				return run.Respond(http.StatusCreated, map[string]string{"ok": "yes"})
			}),
		},
	}}
}

func validIf(ok bool) error {
	if ok {
		return nil
	}
	return errors.New("the body says it is bad")
}

// TestMetricsYouCanAlertOn drives every request outcome, every parked reason and every call
// outcome class, and checks each is counted under its label, exactly.
func TestMetricsYouCanAlertOn(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := &metered{}
	observer, err := sagaprom.NewObserver(reg)
	require.NoError(t, err)
	h := newHarness(t, &saga.Config{Observer: observer, MaxAttempts: 2, RetryDelay: func(int) time.Duration { return time.Hour }}, m.ops)
	run := func(key, body string) error {
		_, err := h.client.Run(t.Context(), "metered", h.req(key, body))
		return err
	}

	// executed, then replayed; mismatch; rejected.
	m.call = func(run *phases.Run) error { run.RecordCall(phases.CallOutcomeSucceeded, "ch_1"); return nil }
	require.NoError(t, run("ok-key-0001", `{}`))
	require.NoError(t, run("ok-key-0001", `{}`))
	require.ErrorIs(t, run("ok-key-0001", `{"other": true}`), saga.ErrKeyReused)
	var invalid *saga.InvalidRequestError
	require.ErrorAs(t, run("bad-key-0001", `{"bad": true}`), &invalid)

	// A declined call (a business outcome the next phase stores).
	m.call = func(run *phases.Run) error { run.RecordCall(phases.CallOutcomeDeclined, "ch_2"); return nil }
	require.NoError(t, run("declined-0001", `{}`))

	// in_progress: a duplicate while the call runs.
	gate := h.points.Block(chaos.BeforeStep("metered", "called"))
	m.call = func(*phases.Run) error { return nil }
	first := crash.Start(func() { _ = run("busy-key-0001", `{}`) })
	<-gate.Reached()
	var inProgress *saga.InProgressError
	require.ErrorAs(t, run("busy-key-0001", `{}`), &inProgress)
	gate.Release()
	require.False(t, first.Wait())

	// unavailable (a call certainly not done), twice: the second retry comes too early and is
	// answered without running; then, when due, the last attempt parks: attempts_exhausted.
	m.call = func(run *phases.Run) error {
		run.RecordCall(phases.CallOutcomeFailedBefore, "")
		return errors.New("provider unavailable")
	}
	var unavailable *saga.TransientError
	require.ErrorAs(t, run("down-key-0001", `{}`), &unavailable)
	require.ErrorAs(t, run("down-key-0001", `{}`), &unavailable)
	h.makeDue("down-key-0001")
	var parked *saga.ParkedError
	require.ErrorAs(t, run("down-key-0001", `{}`), &parked)
	require.Equal(t, saga.ParkedAttemptsExhausted, parked.Reason)
	require.ErrorAs(t, run("down-key-0001", `{}`), &parked, "a parked key answers parked")

	// pending spends nothing, then an unknown outcome parks: outcome_unknown.
	m.call = func(run *phases.Run) error {
		run.RecordCall(phases.CallOutcomePending, "ch_3")
		return phases.RetryAfter(time.Hour, errors.New("pending"))
	}
	require.ErrorAs(t, run("unknown-key-01", `{}`), &unavailable)
	h.makeDue("unknown-key-01")
	m.call = func(*phases.Run) error { return phases.OutcomeUnknown(errors.New("nothing can tell")) }
	require.ErrorAs(t, run("unknown-key-01", `{}`), &parked)
	require.Equal(t, saga.ParkedOutcomeUnknown, parked.Reason)

	// permanent.
	m.call = func(*phases.Run) error { return phases.Permanent(errors.New("malformed")) }
	require.ErrorAs(t, run("broken-key-01", `{}`), &parked)
	require.Equal(t, saga.ParkedPermanent, parked.Reason)

	got := counters(t, reg)
	want := map[string]float64{
		"pgsaga_requests_total{operation=metered,outcome=executed}":    3, // ok, declined, busy
		"pgsaga_requests_total{operation=metered,outcome=replayed}":    1,
		"pgsaga_requests_total{operation=metered,outcome=mismatch}":    1,
		"pgsaga_requests_total{operation=metered,outcome=rejected}":    1,
		"pgsaga_requests_total{operation=metered,outcome=in_progress}": 1,
		"pgsaga_requests_total{operation=metered,outcome=unavailable}": 3, // down twice, pending once
		"pgsaga_requests_total{operation=metered,outcome=parked}":      4, // exhausted, its retry, unknown, permanent

		"pgsaga_parked_total{operation=metered,reason=attempts_exhausted}": 1,
		"pgsaga_parked_total{operation=metered,reason=outcome_unknown}":    1,
		"pgsaga_parked_total{operation=metered,reason=permanent}":          1,

		"pgsaga_call_duration_seconds{operation=metered,outcome=succeeded,step=called}":     2, // ok, busy
		"pgsaga_call_duration_seconds{operation=metered,outcome=declined,step=called}":      1,
		"pgsaga_call_duration_seconds{operation=metered,outcome=failed_before,step=called}": 2,
		"pgsaga_call_duration_seconds{operation=metered,outcome=pending,step=called}":       1,
		"pgsaga_call_duration_seconds{operation=metered,outcome=unknown,step=called}":       2, // outcome_unknown, permanent

		"pgsaga_resumes_total{operation=metered}": 2, // down's second attempt, unknown's second attempt
	}
	for name, v := range want {
		require.Equal(t, v, got[name], name)
	}
	for name := range got {
		if strings.HasPrefix(name, "pgsaga_requests_total") || strings.HasPrefix(name, "pgsaga_parked_total") ||
			strings.HasPrefix(name, "pgsaga_call_duration_seconds") {
			_, ok := want[name]
			require.True(t, ok, "unexpected series %s = %v", name, got[name])
		}
	}
}
