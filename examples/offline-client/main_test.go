package main

import (
	"testing"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

// TestMain gives the tests that run a real pgsaga serve a throwaway PostgreSQL (started only if
// a test asks for a database); the binary migrates its own database.
func TestMain(m *testing.M) { dbtest.Main(m, nil) }
