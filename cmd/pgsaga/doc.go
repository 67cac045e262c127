// Command pgsaga is pgsaga's command-line tool: migrations, the example payments API, the
// recovery worker, key inspection and resumption, retention GC, the gateway simulator and the
// zero-setup demo. The operator's commands live in package cli, so an application builds the
// same tool with its own operations; this binary plugs into it what is its own: the example
// payment operations (examples/payments) with their --gateway-url flag, and the gateway-sim and
// demo commands. Run `pgsaga --help` for the commands, and see package cli for what each
// guarantees on retry, crash, replay and cancel. demo leaves no process and no temporary
// directory behind, also when interrupted.
//
// Exit status: 0 on success, 1 on failure, 2 on bad usage. Errors are one line on stderr.
package main
