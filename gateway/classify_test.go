package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/phases"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for name, tc := range map[string]struct {
		charge *gateway.Charge
		err    error
		want   phases.CallOutcome
	}{
		"succeeded":          {&gateway.Charge{Status: gateway.StatusSucceeded}, nil, succeeded},
		"declined":           {&gateway.Charge{Status: gateway.StatusDeclined}, nil, declined},
		"pending":            {&gateway.Charge{Status: gateway.StatusPending}, nil, pending},
		"processing":         {&gateway.Charge{Status: "processing"}, nil, unknown},
		"refunded":           {&gateway.Charge{Status: "refunded"}, nil, unknown},
		"empty status":       {&gateway.Charge{}, nil, unknown},
		"no charge no error": {nil, nil, unknown},
		"not done":           {nil, gateway.NotDone(boom), failedBefore},
		"wrapped not done":   {nil, fmt.Errorf("ctx: %w", gateway.NotDone(boom)), failedBefore},
		"unknown":            {nil, gateway.Unknown(boom), unknown},
		"unknown wins":       {nil, gateway.Unknown(gateway.NotDone(boom)), unknown},
		"permanent":          {nil, phases.Permanent(boom), failedBefore},
		"outcome unknown":    {nil, phases.OutcomeUnknown(boom), unknown},
		"cannot resolve":     {nil, gateway.ErrCannotResolve, unknown},
		"wrapped unresolved": {nil, fmt.Errorf("resume: %w", gateway.ErrCannotResolve), unknown},
		"pending error":      {nil, phases.RetryAfter(1, fmt.Errorf("x: %w", gateway.ErrPending)), pending},
		"unplaced error":     {nil, boom, unknown},
		"bare context error": {nil, context.DeadlineExceeded, unknown},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, gateway.Charges.Classify(tc.charge, tc.err))
		})
	}
}

// What nothing can resolve parks without compensating; it is never merely
// permanent (compensated as if nothing had moved).
func TestUnresolvableIsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	wrapped := fmt.Errorf("resume: %w", gateway.ErrCannotResolve)
	require.True(t, phases.IsOutcomeUnknown(wrapped))
	require.False(t, phases.IsRetryable(wrapped))
	for _, err := range []error{gateway.ErrPending, gateway.ErrInFlight, gateway.Unknown(io.EOF), phases.Permanent(io.EOF)} {
		require.False(t, phases.IsOutcomeUnknown(err), "%v", err)
	}
}

func TestTransportError(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, refused := http.Get("http://" + addr)
	require.Error(t, refused)
	require.Equal(t, failedBefore, gateway.Classify(gateway.TransportError(refused)))

	for _, err := range []error{io.EOF, io.ErrUnexpectedEOF, context.DeadlineExceeded, errors.New("connection reset by peer")} {
		require.Equal(t, unknown, gateway.Classify(gateway.TransportError(err)), "%v", err)
	}
}
