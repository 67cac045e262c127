package gateway_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
)

func TestDeriveKey(t *testing.T) {
	t.Parallel()
	require.Equal(t, "payment:7f3c", gateway.DeriveKey("payment", "7f3c"))
	require.Equal(t, gateway.DeriveKey("payment", "7f3c"), gateway.DeriveKey("payment", "7f3c"))
	require.NotEqual(t, gateway.DeriveKey("payment", "1"), gateway.DeriveKey("refund", "1"))
}
