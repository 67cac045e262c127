// Command pgsaga is pgsaga's command-line tool: migrations, the example payments API, the
// recovery worker, key inspection and resumption, retention GC, the gateway simulator and the
// zero-setup demo. It carries the example payment operations (examples/payments); the commands
// themselves live in package cli, so an application builds the same tool with its own
// operations. Run `pgsaga --help` for the commands, and see package cli for what each
// guarantees on retry, crash, replay and cancel.
//
// Exit status: 0 on success, 1 on failure, 2 on bad usage. Errors are one line on stderr.
package main
