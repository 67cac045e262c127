// Package chaos holds test-only helpers that break pgsaga on purpose: named points where an
// execution dies or stalls, wrappers that put those points into operations and gateways, sockets
// whose end the server hears only when a test says so, and a pgx tracer that counts the
// statements an execution sends.
//
// A crash point kills the execution that reaches it as a killed process dies
// (internal/testkit/crash): the connection of the atomic phase it is in is lost, its socket closed under it, so no
// ROLLBACK is sent and PostgreSQL aborts the transaction when it notices; nothing after the
// point runs, and the engine gets no error to handle. Run the execution with crash.Run to learn
// whether it died. The tests that need a real process kill one too (Process).
//
// A program under test can also be held at a point from its environment (EnvPause, Pause): the
// pgsaga binary does so only when built with the pgsaga_chaos tag, as its tests build it.
//
// Nothing here is safe for production use, and nothing outside tests and binaries built with
// that tag imports it.
package chaos
