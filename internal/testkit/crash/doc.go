// Package crash ends an execution in-process the way a killed process ends it. The project's
// crash tests (the crash points of internal/testkit/chaos) and its users' (saga/sagatest) die
// through it.
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
// they are a phase's deferred rollback and a call guard's stop. The rollback finds its
// connection closed, sends nothing and hands it back to the pool, which destroys it, as the
// kernel frees a dead process's. The stop ends the call's heartbeats, which a dead process sends
// no more either. The rest of the process lives on: other executions, the client's listener, and a
// heartbeat already under way on a connection of its own when the call died, which finishes (a
// dead process's last heartbeat may have reached the server too).
//
// Run and Start run a function as one request runs in a process that may die, and tell whether
// it died.
package crash
