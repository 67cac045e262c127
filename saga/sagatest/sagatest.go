// Package sagatest lets you prove your own operations exactly-once: Check crashes an operation
// at every recovery point and before and after every external call, recovers it both by a
// client's retry and by the worker's resume, and reports every effect that happened twice or not
// at all, by the counts you give it.
//
// A crash here is what a killed process does: the execution stops where it stands (its goroutine
// ends), its open transaction is lost with its connection (the socket is closed under it, no
// ROLLBACK is sent, PostgreSQL aborts the transaction when it notices, and your pool opens
// another connection in its place), its lease is left to expire. Recovery waits for that expiry,
// as a real retry or worker would, so give Check a short lease (CheckParams.Config.Lease
// defaults to 1s).
//
//	report, err := sagatest.Check(ctx, &sagatest.CheckParams{
//		DB:        pool, // migrated, with your tables
//		Operation: createPayment,
//		Request:   func(ctx context.Context, name string) (*saga.Request, error) { … a fresh key … },
//		Effects:   func(ctx context.Context, req *saga.Request) (map[string]int, error) { … },
//	})
//	if err != nil { … }
//	for _, f := range report.Failures { t.Error(f) }
//
// A test needs a migrated database of its own. NewDB gives one, cloned from a template that
// Main migrates once per test binary, on a throwaway PostgreSQL it starts, or on the server of
// $PGSAGA_TEST_DATABASE_URL:
//
//	func TestMain(m *testing.M) {
//		sagatest.Main(m, &sagatest.DBOpts{Migrations: &migrations.MigrateOpts{Lines: []migrations.Line{myLine}}})
//	}
//
//	func TestCreatePayment(t *testing.T) {
//		t.Parallel()
//		db := sagatest.NewDB(t) // pgsaga's, River's and your tables; dropped when t ends
//		…
//	}
package sagatest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// CheckParams say what to check.
type CheckParams struct {
	// DB is a migrated database holding pgsaga's tables and the operation's. Check writes keys
	// into it (one fresh key per case, from Request). Required.
	DB *pgxpool.Pool
	// Operation is the operation to check, as your service declares it. Required.
	Operation *phases.Operation
	// Request returns a fresh request for one case, named name (use it in the key, so that
	// cases do not meet): a new key, and whatever the request needs to exist (an invoice to
	// pay). Required.
	Request func(ctx context.Context, name string) (*saga.Request, error)
	// Effects counts, by name, the effects the request's intent had so far: rows your phases
	// wrote, charges at your provider, messages sent. Every count must end at its Want. Required.
	Effects func(ctx context.Context, req *saga.Request) (map[string]int, error)
	// Want is what Effects must report once the intent finished. Defaults to 1 for every name
	// Effects reports after the first case that ran undisturbed.
	Want map[string]int
	// Config is the client's configuration for the checked executions (DB and Operations are
	// set by Check). Defaults to Lease 1s, so that recovery waits a second per case.
	Config *saga.Config
	// Parallel is how many cases run at once. Defaults to 8.
	Parallel int
}

// Report is what Check found.
type Report struct {
	// Cases are the cases that ran, in order: each crash point by each way of recovering.
	Cases []CaseResult
	// Failures describe every case where an effect happened twice or not at all, or the
	// answer was not replayed byte for byte. Empty when the operation is exactly-once.
	Failures []string
}

// CaseResult is one case: a crash at Point, recovered by Recovery.
type CaseResult struct {
	// Point is where the first execution crashed ("before <step>", "after <step>", or "answer
	// lost" for a run that finished and whose answer never arrived).
	Point string
	// Recovery is "retry" (the client sends the request again) or "resume" (the worker).
	Recovery string
	// Crashed is false when the execution never reached Point (a step before it answered).
	Crashed bool
	// Effects are the counts after recovery.
	Effects map[string]int
	// Status is the final answer's HTTP status.
	Status int
}

// Check runs the operation once undisturbed, then once per crash point and way of recovering,
// and returns the report. An error means Check itself could not run (a request could not be
// made, the database is unreachable), not that the operation failed the check.
func Check(ctx context.Context, p *CheckParams) (*Report, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	want := p.Want
	base, err := p.newChecker(ctx)
	if err != nil {
		return nil, err
	}
	if want == nil {
		// The undisturbed run tells which effects exist; each must happen once.
		c, err := base.run(ctx, "undisturbed", "", "retry")
		if err != nil {
			return nil, err
		}
		want = map[string]int{}
		for name := range c.Effects {
			want[name] = 1
		}
	}
	var cases [][2]string
	for _, point := range points(p.Operation) {
		for _, recovery := range []string{"retry", "resume"} {
			cases = append(cases, [2]string{point, recovery})
		}
	}
	report := &Report{Cases: make([]CaseResult, len(cases))}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		sem  = make(chan struct{}, p.parallel())
		errs []error
	)
	for i, c := range cases {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			res, err := base.run(ctx, fmt.Sprintf("case-%02d", i), c[0], c[1])
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s, recovered by %s: %w", c[0], c[1], err))
				return
			}
			report.Cases[i] = *res
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return report, err
	}
	for _, c := range report.Cases {
		report.Failures = append(report.Failures, c.failures(want)...)
	}
	return report, nil
}

func (p *CheckParams) validate() error {
	switch {
	case p == nil:
		return errors.New("sagatest: CheckParams are required")
	case p.DB == nil:
		return errors.New("sagatest: CheckParams.DB is required")
	case p.Operation == nil:
		return errors.New("sagatest: CheckParams.Operation is required")
	case p.Request == nil:
		return errors.New("sagatest: CheckParams.Request is required")
	case p.Effects == nil:
		return errors.New("sagatest: CheckParams.Effects is required")
	}
	return p.Operation.Check()
}

func (p *CheckParams) parallel() int {
	if p.Parallel > 0 {
		return p.Parallel
	}
	return 8
}

// points are the crash points of op: before and after each step, and a lost answer.
func points(op *phases.Operation) []string {
	var out []string
	for _, s := range op.Steps {
		out = append(out, "before "+s.Name(), "after "+s.Name())
	}
	return append(out, "answer lost")
}

// failures describes what is wrong with a case's outcome.
func (c *CaseResult) failures(want map[string]int) []string {
	var out []string
	names := slices.Sorted(maps.Keys(want))
	for name := range c.Effects {
		if _, ok := want[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range slices.Compact(names) {
		got := c.Effects[name]
		if w := want[name]; got != w {
			out = append(out, fmt.Sprintf("crash %s, recovered by %s: effect %q happened %d times, want %d", c.Point, c.Recovery, name, got, w))
		}
	}
	return out
}

// defaultLease is the lease of checked executions: the time each recovery waits.
const defaultLease = time.Second
