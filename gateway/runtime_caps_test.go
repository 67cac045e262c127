package gateway_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
)

// A simulator whose settings change at run time: the HTTP adapter must not act on what the
// gateway supported when it was created. A resumed charge first asks (inquiry); if inquiry was
// turned off it falls back to re-sending the same key, or refuses when keys are off too.
func TestExecuteFollowsCapabilitiesChangedAtRunTime(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		idempotency bool
		charges     int
		err         error
	}{
		"inquiry turned off, keys honoured: the same key is re-sent": {true, 1, nil},
		"inquiry and keys turned off: nothing can tell, never guess": {false, 1, gateway.ErrCannotResolve},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newSim(true, true)
			gw := overHTTP(t, s)
			ref := "payment:runtime-" + name[:7]

			// The first attempt charges and its answer is lost.
			s.LoseNext(1)
			_, err := gw.Charge(t.Context(), params(ref, 100))
			require.Equal(t, gateway.OutcomeAmbiguous, gateway.Classify(nil, err))
			require.Equal(t, 1, s.ChargesFor(ref))

			_, err = s.SetFaults(func(st *sim.Settings) { st.Inquiry = false; st.Idempotency = tc.idempotency })
			require.NoError(t, err)

			a := &attempts{}
			charge, err := gateway.Execute(t.Context(), gw, params(ref, 100), &gateway.ExecuteOpts{MayHaveReached: true, OnAttempt: a.record})
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				require.Equal(t, gateway.OutcomePermanent, gateway.Classify(nil, err))
			} else {
				require.NoError(t, err)
				require.Equal(t, gateway.ChargeStatusSucceeded, charge.Status)
			}
			require.Equal(t, tc.charges, s.ChargesFor(ref), "never a second charge")
		})
	}
}
