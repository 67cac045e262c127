package stripe

import (
	"context"
	"fmt"
	"iter"
	"time"

	stripeapi "github.com/stripe/stripe-go/v85"

	"github.com/pgsaga/pgsaga/gateway"
)

// listPageSize is how many PaymentIntents a list request asks for: Stripe's largest page.
const listPageSize = 100

// ListCharges yields every PaymentIntent created at or after since (to the second: Stripe's
// created has no fraction), oldest first, each as it stands when its page is read, a page at
// a time (see the package documentation). A failure ends the iteration with one error: a
// gateway.NotDone (a read changes nothing), or phases.Permanent for a refused
// request.
func (g *Gateway) ListCharges(ctx context.Context, since time.Time) iter.Seq2[gateway.Charge, error] {
	return func(yield func(gateway.Charge, error) bool) {
		fail := func(err error) {
			yield(gateway.Charge{}, fmt.Errorf("error listing stripe PaymentIntents since %s: %w",
				since.Format(time.RFC3339), readError(err)))
		}
		from := unixSecond(since)
		cursor, oldest, err := g.listStart(ctx, from)
		switch {
		case err != nil:
			fail(err)
			return
		case cursor == "":
			return
		case oldest != nil && !yield(*oldest, nil):
			return
		}
		// Paging by ending_before walks from the cursor towards the present; stripe-go's iterator
		// reverses each page, so the walk is oldest first.
		p := &stripeapi.PaymentIntentListParams{
			ListParams:   stripeapi.ListParams{EndingBefore: stripeapi.String(cursor), Limit: stripeapi.Int64(listPageSize)},
			CreatedRange: createdFrom(from),
		}
		for pi, err := range g.client.V1PaymentIntents.List(ctx, p).All(ctx) {
			if err != nil {
				fail(err)
				return
			}
			// Stripe never lists the cursor itself nor what the filter leaves out; a stateless
			// backend (stripe-mock) answers both regardless.
			if pi.ID == cursor || pi.Created < from {
				continue
			}
			if !yield(toListed(pi), nil) {
				return
			}
		}
	}
}

// listStart returns the PaymentIntent the oldest-first walk starts from (its ending_before
// cursor): the newest one created before from, one request; or, when there is none, the oldest
// one created at or after from, found by walking the list to its end a page at a time, and then
// returned mapped as well, since it is the first to list. An empty cursor: nothing to list.
func (g *Gateway) listStart(ctx context.Context, from int64) (cursor string, oldest *gateway.Charge, err error) {
	if from > 0 {
		p := &stripeapi.PaymentIntentListParams{
			ListParams:   stripeapi.ListParams{Limit: stripeapi.Int64(1), Single: true},
			CreatedRange: &stripeapi.RangeQueryParams{LesserThan: from},
		}
		for pi, err := range g.client.V1PaymentIntents.List(ctx, p).All(ctx) {
			if err != nil {
				return "", nil, err
			}
			return pi.ID, nil, nil
		}
	}
	p := &stripeapi.PaymentIntentListParams{
		ListParams:   stripeapi.ListParams{Limit: stripeapi.Int64(listPageSize)},
		CreatedRange: createdFrom(from),
	}
	var last *stripeapi.PaymentIntent
	for pi, err := range g.client.V1PaymentIntents.List(ctx, p).All(ctx) {
		if err != nil {
			return "", nil, err
		}
		if pi.Created >= from {
			last = pi
		}
	}
	if last == nil {
		return "", nil, nil
	}
	charge := toListed(last)
	return last.ID, &charge, nil
}

// unixSecond is t in whole Unix seconds, rounded down; 0 (no bound) for a time at or before
// the epoch.
func unixSecond(t time.Time) int64 {
	return max(t.Unix(), 0)
}

// createdFrom filters a list on created >= from; nil (no filter) for 0.
func createdFrom(from int64) *stripeapi.RangeQueryParams {
	if from == 0 {
		return nil
	}
	return &stripeapi.RangeQueryParams{GreaterThanOrEqual: from}
}
