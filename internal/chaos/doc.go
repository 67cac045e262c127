// Package chaos holds test-only helpers that break pgsaga on purpose: named points where an
// execution "dies" or stalls, wrappers that put those points into operations and gateways, and
// a pgx tracer that counts the statements an execution sends.
//
// A crash point ends the goroutine that reaches it with runtime.Goexit: deferred calls run (as
// the database rolls back the transaction of a connection that went away) but nothing after the
// point does, and the engine gets no error to handle. That is what a kill -9 looks like from
// the database's side, without a subprocess; the tests that need a real process kill one too.
//
// A program under test can also be held at a point from its environment (EnvPause, Pause): the
// pgsaga binary does so only when built with the pgsaga_chaos tag, as its tests build it.
//
// Nothing here is safe for production use, and nothing outside tests and binaries built with
// that tag imports it.
package chaos
