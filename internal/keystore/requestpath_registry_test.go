package keystore

import "context"

// ignore drops the generated method's result: the test compares what it sent.
func ignore[T any](_ T, err error) error { return err }

// requestPath lists every request path statement with its generated method, for the test that
// checks each binding against the method.
var requestPath = []struct {
	name   string
	bind   func(p any) *Statement
	method func(q *Queries, ctx context.Context, p any) error
	params func() any
}{
	{"ReadHead", func(p any) *Statement { return BindReadHead(p.(*ReadHeadParams)) },
		func(q *Queries, ctx context.Context, p any) error {
			return ignore(q.ReadHead(ctx, p.(*ReadHeadParams)))
		},
		func() any { return new(ReadHeadParams) }},
	{"ClaimCompleted", func(p any) *Statement { return BindClaimCompleted(p.(*ClaimCompletedParams)) },
		func(q *Queries, ctx context.Context, p any) error {
			return q.ClaimCompleted(ctx, p.(*ClaimCompletedParams))
		},
		func() any { return new(ClaimCompletedParams) }},
	{"ClaimCompletedOrNothing", func(p any) *Statement { return BindClaimCompletedOrNothing(p.(*ClaimCompletedOrNothingParams)) },
		func(q *Queries, ctx context.Context, p any) error {
			return ignore(q.ClaimCompletedOrNothing(ctx, p.(*ClaimCompletedOrNothingParams)))
		},
		func() any { return new(ClaimCompletedOrNothingParams) }},
	{"ClaimStarted", func(p any) *Statement { return BindClaimStarted(p.(*ClaimStartedParams)) },
		func(q *Queries, ctx context.Context, p any) error {
			return ignore(q.ClaimStarted(ctx, p.(*ClaimStartedParams)))
		},
		func() any { return new(ClaimStartedParams) }},
	{"ClaimStartedJournal", func(p any) *Statement { return BindClaimStartedJournal(p.(*ClaimStartedJournalParams)) },
		func(q *Queries, ctx context.Context, p any) error {
			return ignore(q.ClaimStartedJournal(ctx, p.(*ClaimStartedJournalParams)))
		},
		func() any { return new(ClaimStartedJournalParams) }},
	{"ClaimStartedJournalOrNothing", func(p any) *Statement {
		return BindClaimStartedJournalOrNothing(p.(*ClaimStartedJournalOrNothingParams))
	},
		func(q *Queries, ctx context.Context, p any) error {
			return ignore(q.ClaimStartedJournalOrNothing(ctx, p.(*ClaimStartedJournalOrNothingParams)))
		},
		func() any { return new(ClaimStartedJournalOrNothingParams) }},
	{"ClaimParkedOrNothing", func(p any) *Statement { return BindClaimParkedOrNothing(p.(*ClaimParkedOrNothingParams)) },
		func(q *Queries, ctx context.Context, p any) error {
			return ignore(q.ClaimParkedOrNothing(ctx, p.(*ClaimParkedOrNothingParams)))
		},
		func() any { return new(ClaimParkedOrNothingParams) }},
	{"Advance", func(p any) *Statement { return BindAdvance(p.(*AdvanceParams)) },
		func(q *Queries, ctx context.Context, p any) error { return ignore(q.Advance(ctx, p.(*AdvanceParams))) },
		func() any { return new(AdvanceParams) }},
	{"AdvanceCallInRow", func(p any) *Statement { return BindAdvanceCallInRow(p.(*AdvanceCallInRowParams)) },
		func(q *Queries, ctx context.Context, p any) error {
			return ignore(q.AdvanceCallInRow(ctx, p.(*AdvanceCallInRowParams)))
		},
		func() any { return new(AdvanceCallInRowParams) }},
	{"Complete", func(p any) *Statement { return BindComplete(p.(*CompleteParams)) },
		func(q *Queries, ctx context.Context, p any) error {
			return ignore(q.Complete(ctx, p.(*CompleteParams)))
		},
		func() any { return new(CompleteParams) }},
	{"CompleteCallInRow", func(p any) *Statement { return BindCompleteCallInRow(p.(*CompleteCallInRowParams)) },
		func(q *Queries, ctx context.Context, p any) error {
			return ignore(q.CompleteCallInRow(ctx, p.(*CompleteCallInRowParams)))
		},
		func() any { return new(CompleteCallInRowParams) }},
	{"CompleteCallInRowAlone", func(p any) *Statement { return BindCompleteCallInRowAlone(p.(*CompleteCallInRowAloneParams)) },
		func(q *Queries, ctx context.Context, p any) error {
			return ignore(q.CompleteCallInRowAlone(ctx, p.(*CompleteCallInRowAloneParams)))
		},
		func() any { return new(CompleteCallInRowAloneParams) }},
	{"Release", func(p any) *Statement { return BindRelease(p.(*ReleaseParams)) },
		func(q *Queries, ctx context.Context, p any) error { return ignore(q.Release(ctx, p.(*ReleaseParams))) },
		func() any { return new(ReleaseParams) }},
	{"ReleaseCallInRow", func(p any) *Statement { return BindReleaseCallInRow(p.(*ReleaseCallInRowParams)) },
		func(q *Queries, ctx context.Context, p any) error {
			return ignore(q.ReleaseCallInRow(ctx, p.(*ReleaseCallInRowParams)))
		},
		func() any { return new(ReleaseCallInRowParams) }},
	{"Park", func(p any) *Statement { return BindPark(p.(*ParkParams)) },
		func(q *Queries, ctx context.Context, p any) error { return ignore(q.Park(ctx, p.(*ParkParams))) },
		func() any { return new(ParkParams) }},
	{"ParkCallInRow", func(p any) *Statement { return BindParkCallInRow(p.(*ParkCallInRowParams)) },
		func(q *Queries, ctx context.Context, p any) error {
			return ignore(q.ParkCallInRow(ctx, p.(*ParkCallInRowParams)))
		},
		func() any { return new(ParkCallInRowParams) }},
}
