// Package cli is pgsaga's operator command line as a library: migrate, serve, worker, keys,
// show, resume, settle, gc, console, apikey and operator, built around an App that carries an application's own operations and
// migrations. An application's binary is `os.Exit(cli.Main(app))`. The package carries nothing
// of any application: the pgsaga binary (cmd/pgsaga) plugs in the example payments service
// with App.Build, its --gateway-url flag with App.Flags, and its gateway-sim and demo commands
// with App.Commands, the same extension points any application uses.
//
// Exit status: 0 on success, 1 on failure, 2 on bad usage (unknown command or flag, bad flag
// value, missing required flag or argument, and no database URL: --database-url defaults to
// $DATABASE_URL, and a command that needs a database and has neither is bad usage). Errors are
// printed on stderr as one line, "<name> <command>: <message>".
//
// What the commands guarantee:
//   - migrate applies each pending version once, in its own transaction, under an advisory lock;
//     running it again (or concurrently) changes nothing.
//   - serve answers the application's API; every POST is idempotent under its key (see package
//     saga). It refuses to start on a database that lacks a migration. On SIGINT or SIGTERM it
//     stops accepting, lets requests in flight finish (up to 10s), then stops the worker. A
//     request cut short by a crash (kill -9) leaves its key started; a retry after the lease
//     expires, the worker or `resume` continues it from its recovery point.
//   - serve takes a request into one of its --max-in-flight slots only once its body is read
//     (at most 1 MiB, within 30s, or the connection is cut), and no tenant or webhook source
//     holds more than --max-in-flight-per-tenant of them: over its share a request is answered
//     429 too_many_requests, beyond every slot 503 temporarily_unavailable, both with
//     Retry-After and before the handler, so nothing of either is stored (see admission.go).
//   - Every refused authentication (serve's API keys and webhook signatures, the console's
//     sign-ins) is counted in pgsaga_auth_failures_total{surface,reason} and logged at a
//     bounded rate with the client's address (--trusted-proxies: the one a trusted proxy
//     names), never a secret. Every answer of serve and the console carries X-Request-ID, which
//     the request's log lines carry too.
//   - serve hands the application BuildParams.Scope, which authenticates a request by its API
//     key: a request without a valid one is 401 before anything is read or stored, and a revoke
//     (apikey revoke) applies to the next request in every process, since each request reads
//     its key. The scope headers are trusted only with --insecure-scope-headers, on a loopback
//     address. /metrics and /healthz are served on --ops-addr only.
//   - apikey and operator show a secret once, when they make it; only its SHA-256 digest is
//     stored, and list never shows one.
//   - Every human (non-JSON) output shows the control characters of stored values escaped
//     (\x1b): a stored path or error cannot write to the operator's terminal.
//   - serve and worker wait up to --db-wait for a database that cannot be reached at start, and
//     keep running through a database restart: a request or resume the restart interrupts
//     fails as any transient failure does (the key stays started) and is finished later.
//   - resume takes the key's lease (a parked key too), so it never runs beside another
//     execution: while another process holds a live lease it refuses with exit 1 and changes
//     nothing. Resuming a completed key prints its stored response and changes nothing.
//     resume --stuck resumes each stuck key so, one after the other, and exits 1 when any did
//     not finish.
//   - serve, worker, resume, settle and console export OpenTelemetry spans by OTLP over HTTP when
//     the environment asks for it (OTEL_TRACES_EXPORTER=otlp, or OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set), and none otherwise; serve's API continues an
//     incoming traceparent. A span that could not be exported is logged, never an error of the
//     command; what is buffered is sent when the command ends. Another exporter, or OTLP over
//     gRPC, is bad usage.
//   - With --database-pooling=transaction (PgBouncer in transaction pooling mode) every command
//     opens its pool in pgx's cache_describe mode, the worker's River polls, and migrate is
//     refused (it needs a session). serve and worker refuse to start when a LISTEN they rely on
//     hears nothing: a pooled --database-url without the flag, or a --listen-database-url
//     through the pooler.
//   - keys, show and gc --dry-run only read. gc deletes only completed keys past their window
//     (with --older-than, older than that; --older-than 0s, every completed key); started and
//     failed keys never.
package cli
