package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for name, tc := range map[string]struct {
		charge *gateway.Charge
		err    error
		want   gateway.Outcome
	}{
		"succeeded":          {&gateway.Charge{Status: gateway.ChargeStatusSucceeded}, nil, gateway.OutcomeSucceeded},
		"declined":           {&gateway.Charge{Status: gateway.ChargeStatusDeclined}, nil, gateway.OutcomeDeclined},
		"no charge no error": {nil, nil, gateway.OutcomeAmbiguous},
		"retryable":          {nil, &gateway.RetryableError{Err: boom}, gateway.OutcomeRetryable},
		"wrapped retryable":  {nil, fmt.Errorf("ctx: %w", &gateway.RetryableError{Err: boom}), gateway.OutcomeRetryable},
		"ambiguous":          {nil, &gateway.AmbiguousError{Err: boom}, gateway.OutcomeAmbiguous},
		"ambiguous wins":     {nil, &gateway.AmbiguousError{Err: &gateway.RetryableError{Err: boom}}, gateway.OutcomeAmbiguous},
		"permanent":          {nil, &gateway.PermanentError{Err: boom}, gateway.OutcomePermanent},
		"key expired":        {nil, fmt.Errorf("resume: %w", gateway.ErrKeyExpired), gateway.OutcomePermanent},
		"cannot resolve":     {nil, gateway.ErrCannotResolve, gateway.OutcomePermanent},
		"unknown error":      {nil, boom, gateway.OutcomeAmbiguous},
		"bare context error": {nil, context.DeadlineExceeded, gateway.OutcomeAmbiguous},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, gateway.Classify(tc.charge, tc.err))
		})
	}
}
