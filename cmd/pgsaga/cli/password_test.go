package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHasPassword(t *testing.T) {
	t.Parallel()
	for conn, want := range map[string]bool{
		"postgres://app:secret@db/app":                                    true,
		"postgresql://app:s%40cret@db1:5432,db2:5432/app?sslmode=require": true,
		"postgres://app@db/app?password=secret":                           true,
		"host=db user=app password=secret":                                true,
		"password=secret host=db":                                         true,
		"postgres://app@db/app":                                           false,
		"postgres://app@db/app?sslmode=disable&application_name=a:b@c":    false,
		"postgres:///app?host=/run/postgresql":                            false,
		"host=db user=app passfile=/x":                                    false,
		"postgres://app:@db/app":                                          true,
	} {
		require.Equal(t, want, hasPassword(conn), conn)
	}
}
