package stripe_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/phases"
)

// t0 is a creation time in Unix seconds, for PaymentIntents created directly in the fake.
const t0 = int64(1_767_225_600)

// populate creates, in the fake, two PaymentIntents before t0 (in the same second), two at t0,
// and n after it (three to a second), and returns the ids of those created at or after t0 in
// creation order, which is the order a listing since t0 must yield them in.
func populate(f *fakeStripe, n int) []string {
	f.add(t0-1, "payment:before-1", "succeeded")
	f.add(t0-1, "payment:before-2", "succeeded")
	want := []string{f.add(t0, "payment:at-1", "succeeded"), f.add(t0, "payment:at-2", "succeeded")}
	for i := range n {
		want = append(want, f.add(t0+1+int64(i/3), fmt.Sprintf("payment:after-%d", i), "succeeded"))
	}
	return want
}

func TestListChargesOldestFirst(t *testing.T) {
	t.Parallel()
	f := newFakeStripe(t)
	want := populate(f, 250)
	// Half a second into t0: Stripe's created has no fraction, so that whole second is listed.
	since := time.Unix(t0, int64(500*time.Millisecond))

	got := listAll(t, newGateway(t, f.url()), since)
	require.Equal(t, want, chargeIDs(got), "every PaymentIntent since then once, oldest first")
	for _, c := range got {
		require.False(t, c.CreatedAt.Before(time.Unix(t0, 0)), c.ID)
		require.Equal(t, gateway.StatusSucceeded, c.Status)
		require.Equal(t, "USD", c.Currency)
		require.NotEmpty(t, c.Reference)
	}
	require.Equal(t, 1+3, f.listCount(), "one request for the PaymentIntent before, then pages of 100")
}

// With no PaymentIntent older than the time, the oldest one is found by walking the list to its
// end, keeping one page, and the listing pages forward from it.
func TestListChargesWithNothingOlder(t *testing.T) {
	t.Parallel()
	f := newFakeStripe(t)
	want := populate(f, 250)
	all := append([]string{"pi_fake0001", "pi_fake0002"}, want...)

	got := listAll(t, newGateway(t, f.url()), time.Unix(t0-100, 0))
	require.Equal(t, all, chargeIDs(got))
	require.Equal(t, 1+3+3, f.listCount(), "no PaymentIntent before; three pages to the oldest; three back")

	got = listAll(t, newGateway(t, f.url()), time.Time{})
	require.Equal(t, all, chargeIDs(got), "since the beginning")
}

// A caller that stops early costs only the pages it read, and a PaymentIntent created while the
// listing runs is yielded at its end.
func TestListChargesPagesLazily(t *testing.T) {
	t.Parallel()
	f := newFakeStripe(t)
	want := populate(f, 250)
	gw := newGateway(t, f.url())
	since := time.Unix(t0, 0)

	for range gw.ListCharges(context.Background(), since) {
		break
	}
	require.Equal(t, 2, f.listCount(), "the PaymentIntent before, and one page")

	var got []string
	var added string
	for c, err := range gw.ListCharges(context.Background(), since) {
		require.NoError(t, err)
		if added == "" {
			added = f.add(t0+1000, "payment:meanwhile", "processing")
		}
		got = append(got, c.ID)
	}
	require.Equal(t, append(want, added), got)
}

// Each PaymentIntent is listed as it stands when its page is read, whatever its status.
func TestListChargesAsTheyStand(t *testing.T) {
	t.Parallel()
	f := newFakeStripe(t)
	succeeded := f.add(t0, "payment:s", "processing")
	declined := f.add(t0, "payment:d", "requires_action")
	unknown := f.add(t0, "payment:u", "succeeded")
	foreign := f.add(t0, "", "requires_payment_method")
	f.setStatus(succeeded, "succeeded")
	f.setStatus(declined, "canceled")
	f.setStatus(unknown, "on_hold_forever")

	got := listAll(t, newGateway(t, f.url()), time.Unix(t0, 0))
	require.Equal(t, []string{succeeded, declined, unknown, foreign}, chargeIDs(got))
	require.Equal(t, []gateway.Status{gateway.StatusSucceeded, gateway.StatusDeclined,
		"on_hold_forever", gateway.StatusDeclined}, []gateway.Status{got[0].Status, got[1].Status, got[2].Status, got[3].Status},
		"a status the adapter does not know is listed as Stripe's, neither final nor pending")
	require.Empty(t, got[3].Reference, "another integration's PaymentIntent is listed, without a reference")
}

// A failure ends the listing with one error, which says a read may be retried.
func TestListChargesStopsAtAFailure(t *testing.T) {
	t.Parallel()
	f := newFakeStripe(t)
	populate(f, 250)
	f.set(func(f *fakeStripe) { f.failListAfter = 2 })
	var got, errs int
	for c, err := range newGateway(t, f.url()).ListCharges(context.Background(), time.Unix(t0, 0)) {
		if err != nil {
			errs++
			require.Zero(t, c)
			require.Equal(t, phases.CallOutcomeFailedBefore, gateway.Classify(err), "a read changes nothing: %v", err)
			require.True(t, phases.IsRetryable(err))
			continue
		}
		got++
	}
	require.Equal(t, 100, got, "the first page")
	require.Equal(t, 1, errs)
}

func TestListChargesEmpty(t *testing.T) {
	t.Parallel()
	f := newFakeStripe(t)
	populate(f, 3)
	require.Empty(t, listAll(t, newGateway(t, f.url()), time.Unix(t0+100, 0)))
	require.Empty(t, listAll(t, newGateway(t, newFakeStripe(t).url()), time.Time{}), "an account without PaymentIntents")
}

func chargeIDs(charges []gateway.Charge) []string {
	out := make([]string, len(charges))
	for i, c := range charges {
		out[i] = c.ID
	}
	return out
}
