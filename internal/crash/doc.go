// Package crash ends an execution in-process the way a killed process ends it. The project's
// crash tests (internal/chaos's crash points) and its users' (saga/sagatest) die through it.
//
// A killed process stops where it stands. Nothing after that point runs, and nothing it
// deferred. The kernel closes its sockets, and PostgreSQL, when it reads the end of one, aborts
// the transaction that was open on it and ends the session. No ROLLBACK ever arrives: until the
// server notices, the transaction stays open and keeps its locks.
//
// Die does the same to the connections the dying execution holds, then ends its goroutine:
//
//	crash.Die(tx.Conn()) // in an atomic phase: its transaction's connection
//	crash.Die()          // in a call: it holds no connection
//
// Each connection's socket is closed under it first, so not one byte more goes out on it: not
// the Terminate message that a polite close sends, not a ROLLBACK. Then pgx is told that the
// connection is closed, so that nothing tries to send on it, and a pool destroys it when it is
// released instead of handing it out again.
//
// Goexit runs the goroutine's deferred calls, which a killed process never does. In the engine
// they are a phase's deferred rollback and a call guard's stop: the first finds its connection
// closed and sends nothing, the second stops the heartbeats as a dead process's stop. Both
// return the connections to the pool, as the kernel would free them. The rest of the process
// lives on: other executions, the client's listener, and a heartbeat already under way on its
// own connection when the call died, which finishes (a dead process's heartbeat may have
// reached the server too).
//
// Run and Start run a function as one request runs in a process that may die, and tell whether
// it died.
package crash
