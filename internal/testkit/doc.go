// Package testkit holds nothing itself. Its subpackages are the project's test support, kept
// apart from the engine's internal parts: a throwaway PostgreSQL and PgBouncer (pglocal), a
// database per test (dbtest), children that die with their parent (childproc), the in-process
// crash (crash) and the crash and fault points built on it (chaos), the resumer's test operation
// (resumetest), and the repository's own checks (libdeps, usermodule).
//
// The public test kit, saga/sagatest, is built on pglocal, dbtest and crash; the pgsaga
// binary's demo starts its throwaway PostgreSQL with pglocal. Nothing else outside tests imports
// them. The chaos soak and the failover tests are a module of their own (soak).
package testkit
