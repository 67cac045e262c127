package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIntentPaymentID checks the soak's derivation against the value the library fixes for the
// same intent.
func TestIntentPaymentID(t *testing.T) {
	t.Parallel()
	require.Equal(t, "pay_rne4adu4q7uttomahtfnsihyc4", intentPaymentID(scope{Tenant: "tenant-1", Actor: "alice", Key: "4f1c2a9e-key"}))
	require.NotEqual(t, intentPaymentID(scope{Tenant: "t", Actor: "a", Key: "k"}), intentPaymentID(scope{Tenant: "t", Actor: "b", Key: "k"}))
}
