package saga

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/pgsaga/pgsaga/phases"
)

// Config configures a Client.
type Config struct {
	// DB is the database holding pgsaga's tables (migrated by the migrations package): a
	// *pgxpool.Pool, or any DB that lends connections (ConnDB). Phases take a connection of
	// their own from it, so that their BEGIN and COMMIT travel with pgsaga's statements.
	// Required.
	DB DB
	// Operations are the operations this client can run and resume. A stored key whose
	// operation is not here cannot be resumed by this client.
	Operations []*phases.Operation
	// Lease is how long an execution owns a key before another may take it over. Every phase
	// renews it, from the moment its write runs; an external call renews it before it is sent
	// and a heartbeat (every third of the lease) keeps a long call leased. Defaults to 30s.
	Lease time.Duration
	// CallTimeout bounds each external call. Independently of it, a call is cut a quarter of
	// a lease before its lease would end if a heartbeat could not renew it, so a call never
	// runs on a lease another execution may take over. Defaults to two thirds of Lease.
	CallTimeout time.Duration
	// MaxAttempts is how many scheduled executions a key gets: the first request, then every
	// takeover by a retry or the worker (an execution that only waited for a pending call does
	// not count). A key whose budget is spent is parked (attempts_exhausted), also when its
	// executions never returned (a poison key that kills its process). An operation may set
	// its own. Defaults to 10.
	MaxAttempts int
	// MaxAge parks a started key older than this at its next execution (attempts_exhausted).
	// An operation may set its own. Defaults to 7 days.
	MaxAge time.Duration
	// Retention is how long completed keys are kept for replay. An operation may set its own.
	// Defaults to 24h.
	Retention time.Duration
	// RetryDelay is the wait before the worker tries a key again after its attempt-th transient
	// failure. Defaults to exponential from 1s, capped at 5m, with ±50% jitter.
	RetryDelay func(attempt int) time.Duration
	// Redact may change a response before it is stored (remove secrets or card data); returning
	// nil keeps it as is. The response sent to the first caller is the stored one. Defaults to
	// storing it unchanged.
	Redact func(operation string, resp *Response) *Response
	// RedactRequest may change a request body before it is stored for resuming (return nil to
	// keep it as it is). A key whose first phase commits before its last one keeps its request
	// body, so that a retry, the worker or an operator can run the remaining steps; a
	// single-transaction operation, or one finished by its first phase, stores no body at all.
	// It runs once per key, on the first execution, after the request was fingerprinted: a
	// retry is still recognised by the body as it arrived (replay, 409) and a different body
	// still refused (422), and the first execution's steps see the body as it arrived. A
	// resumed execution's steps (and compensations) see the redacted body. So redact only what
	// no step after the first phase and no compensation reads (a card number the first phase
	// exchanges for a token it saves with phases.Value, a password), and keep the body what
	// those steps parse. Defaults to storing the body as it arrived.
	RedactRequest func(operation string, body []byte) []byte
	// StoredHeaders are the response headers stored and replayed. Defaults to Content-Type and
	// Location.
	StoredHeaders []string
	// Logger receives one line per notable event, with key and operation attributes and never a
	// request body. Defaults to a logger that discards.
	Logger *slog.Logger
	// Observer receives what the engine does (requests by outcome, steps, calls by outcome
	// class, resumes, parks by reason), for metrics: sagaprom.NewObserver feeds Prometheus.
	// Defaults to observing nothing.
	Observer Observer
	// TracerProvider, when set, receives the engine's OpenTelemetry spans (pgsaga.request,
	// pgsaga.phase, pgsaga.call, pgsaga.compensate, pgsaga.resume, pgsaga.settle: see the
	// package documentation), and each new key stores the trace context of the request that
	// claimed it, so that a resume after a crash joins that request's trace. Defaults to none:
	// no spans, no trace context stored, and nothing spent on tracing.
	TracerProvider trace.TracerProvider
	// TransactionPooling declares that DB reaches PostgreSQL through a pooler in transaction
	// pooling mode (PgBouncer's pool_mode=transaction), where each transaction of a connection
	// may run in another server session: nothing that lives in a session (LISTEN, named
	// prepared statements) survives from one transaction to the next. DB's pool must then use
	// pgx's QueryExecModeCacheDescribe (default_query_exec_mode=cache_describe in its URL),
	// and the bounded wait for a request in flight (phases.Operation.WaitInFlight) listens on
	// ListenDB, or polls the key when ListenDB is nil. Defaults to false: DB's connections are
	// sessions of their own (a direct connection, or session pooling).
	TransactionPooling bool
	// ListenDB is where the bounded wait for a request in flight (phases.Operation.WaitInFlight)
	// LISTENs for the key's completion: the same database as DB, reached so that a connection
	// is a session of its own (directly, or through session pooling), such as a direct
	// connection to the primary beside a DB behind PgBouncer. While duplicates wait, the client
	// holds one connection of its own, opened with ListenDB's connection settings outside its
	// pool and shared by every waiting duplicate; it closes when the last one stops waiting. A
	// waiting duplicate takes a pooled connection of DB only for each of its statements.
	// CheckListen checks that notifications reach it. Defaults to DB when it is a pool, or
	// with TransactionPooling (or a DB that is no pool) to none: a waiting duplicate then reads
	// the key at growing intervals, from 10ms to 100ms, holding no connection in between (so it
	// does too while the listening connection cannot be opened).
	ListenDB *pgxpool.Pool
}

// withDefaults returns a copy of the config with every unset field given its default.
func (c *Config) withDefaults() *Config {
	out := *c
	if out.Lease == 0 {
		out.Lease = 30 * time.Second
	}
	if out.CallTimeout == 0 {
		out.CallTimeout = out.Lease * 2 / 3
	}
	if out.MaxAttempts == 0 {
		out.MaxAttempts = 10
	}
	if out.MaxAge == 0 {
		out.MaxAge = 7 * 24 * time.Hour
	}
	if out.Retention == 0 {
		out.Retention = 24 * time.Hour
	}
	if out.RetryDelay == nil {
		out.RetryDelay = defaultRetryDelay
	}
	if out.StoredHeaders == nil {
		out.StoredHeaders = []string{"Content-Type", "Location"}
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return &out
}

func (c *Config) validate() error {
	if pool, ok := c.DB.(*pgxpool.Pool); c.DB == nil || ok && pool == nil {
		return errors.New("saga: Config.DB is required")
	}
	if !lendsConns(c.DB) {
		return fmt.Errorf("saga: Config.DB (%T) lends no connection for a phase's transaction: use a *pgxpool.Pool, or implement ConnDB", c.DB)
	}
	if c.Lease < time.Second {
		return fmt.Errorf("saga: Config.Lease must be at least 1s, got %s", c.Lease)
	}
	if c.CallTimeout <= 0 {
		return fmt.Errorf("saga: Config.CallTimeout must be positive, got %s", c.CallTimeout)
	}
	if c.MaxAge < 0 {
		return fmt.Errorf("saga: Config.MaxAge must not be negative, got %s", c.MaxAge)
	}
	if c.MaxAttempts < 1 {
		return fmt.Errorf("saga: Config.MaxAttempts must be at least 1, got %d", c.MaxAttempts)
	}
	if c.Retention < 0 {
		return fmt.Errorf("saga: Config.Retention must not be negative, got %s", c.Retention)
	}
	if err := c.validatePooling(); err != nil {
		return err
	}
	names := map[string]bool{}
	for _, op := range c.Operations {
		if op == nil {
			return errors.New("saga: Config.Operations has a nil operation")
		}
		if err := op.Check(); err != nil {
			return err
		}
		if names[op.Name] {
			return fmt.Errorf("saga: Config.Operations has two operations named %q", op.Name)
		}
		names[op.Name] = true
	}
	return nil
}

// defaultRetryDelay is exponential from 1s, doubling per attempt, capped at 5m, with ±50%
// jitter so that keys failed together are not retried together.
func defaultRetryDelay(attempt int) time.Duration {
	base := time.Second
	for i := 1; i < attempt && base < 5*time.Minute; i++ {
		base *= 2
	}
	base = min(base, 5*time.Minute)
	return base/2 + rand.N(base)
}

// validatePooling refuses the database settings that cannot work: JSON the engine sends as
// []byte arrives as bytea in pgx's exec and simple protocol modes (and is refused as invalid
// JSON, which would answer requests 400); behind a transaction pooler, the cache_statement and
// describe_exec modes use prepared statements another client may meet or replace on the same
// server connection, and LISTEN hears nothing.
func (c *Config) validatePooling() error {
	if pool, ok := c.DB.(*pgxpool.Pool); ok {
		mode := pool.Config().ConnConfig.DefaultQueryExecMode
		switch {
		case mode == pgx.QueryExecModeExec || mode == pgx.QueryExecModeSimpleProtocol:
			return fmt.Errorf("saga: Config.DB's pool uses pgx's %s mode, which sends JSON held in []byte as bytea: "+
				"use cache_statement (pgx's default), or cache_describe behind a transaction pooler", execModeName(mode))
		case c.TransactionPooling && mode != pgx.QueryExecModeCacheDescribe:
			return fmt.Errorf("saga: Config.TransactionPooling needs Config.DB's pool in pgx's cache_describe mode "+
				"(default_query_exec_mode=cache_describe in its URL), got %s, whose prepared statements a transaction pooler "+
				"shares between clients", execModeName(mode))
		}
	}
	if c.TransactionPooling && c.ListenDB != nil && c.ListenDB == c.DB {
		return errors.New("saga: Config.ListenDB is Config.DB, which is transaction-pooled (Config.TransactionPooling): " +
			"LISTEN needs a session of its own, a direct connection or session pooling")
	}
	return nil
}

// execModeName is mode as pgx's default_query_exec_mode URL parameter spells it.
func execModeName(mode pgx.QueryExecMode) string { return strings.ReplaceAll(mode.String(), " ", "_") }
