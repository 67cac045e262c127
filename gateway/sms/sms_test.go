package sms_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/effectsim"
	"github.com/pgsaga/pgsaga/gateway/gatewaytest"
	"github.com/pgsaga/pgsaga/gateway/sms"
	"github.com/pgsaga/pgsaga/gateway/sms/smssim"
	"github.com/pgsaga/pgsaga/phases"
)

func message(ref string) sms.Params {
	return sms.Params{To: "+14155550100", Text: "Your order has shipped", Reference: ref, IdempotencyKey: ref}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var fast = &gateway.ExecuteOpts{RetryDelay: func(int) time.Duration { return time.Millisecond }}

// traced records the calls made through a provider, in order: "send", "inquire", "get".
type traced struct {
	sms.Provider
	calls []string
}

func (p *traced) Send(ctx context.Context, params sms.Params) (*sms.Message, error) {
	p.calls = append(p.calls, "send")
	return p.Provider.Send(ctx, params)
}

func (p *traced) Inquire(ctx context.Context, ref string) ([]sms.Message, error) {
	p.calls = append(p.calls, "inquire")
	return p.Provider.Inquire(ctx, ref)
}

func conformance(cfg smssim.Config) *gatewaytest.EffectOpts[sms.Params, sms.Message] {
	with := func(change func(*smssim.Config)) *effectsim.Simulator[sms.Params, sms.Message] {
		c := cfg
		change(&c)
		return smssim.New(&c)
	}
	return &gatewaytest.EffectOpts[sms.Params, sms.Message]{
		NewParams: message,
		Invalid:   func(ref string) sms.Params { p := message(ref); p.To = "4155550100"; return p },
		Declining: func(t *testing.T, ref string) (sms.Provider, sms.Params) {
			return with(func(c *smssim.Config) { c.OptedOut = []string{"+14155550199"} }),
				sms.Params{To: "+14155550199", Text: "hello", Reference: ref, IdempotencyKey: ref}
		},
		Slow: func(t *testing.T) sms.Provider {
			return with(func(c *smssim.Config) { c.Latency = time.Minute })
		},
		Pending: func(t *testing.T) (sms.Provider, func(string) int) {
			s := with(func(c *smssim.Config) { c.PendingFor = 300 * time.Millisecond })
			s.PendingNext(1)
			return s, s.Count
		},
		Lossy: func(t *testing.T) (sms.Provider, func(string) int) {
			s := with(func(*smssim.Config) {})
			s.LoseNext(1)
			return s, s.Count
		},
		Hanging: func(t *testing.T) (sms.Provider, func(string) int) {
			s := with(func(c *smssim.Config) { c.RequestTimeout = 200 * time.Millisecond })
			s.HangNext(1)
			return s, s.Count
		},
		InFlight: func(t *testing.T, hold time.Duration) (sms.Provider, func(string) int) {
			s := with(func(c *smssim.Config) { c.LatencyBefore = hold })
			return s, s.Count
		},
	}
}

// The simulated provider, as configured by default (inquiry, no keys) and with keys as well,
// passes the suite every adapter passes.
func TestConformance(t *testing.T) {
	t.Parallel()
	s := smssim.New(nil)
	o := conformance(smssim.Config{})
	o.Count = s.Count
	gatewaytest.RunEffect(t, func(*testing.T) sms.Provider { return s }, o)
}

func TestConformanceWithKeys(t *testing.T) {
	t.Parallel()
	on := true
	cfg := smssim.Config{Idempotency: &on}
	s := smssim.New(&cfg)
	o := conformance(cfg)
	o.Count = s.Count
	gatewaytest.RunEffect(t, func(*testing.T) sms.Provider { return s }, o)
}

func TestSimDeclaresNoKeysAndInquiry(t *testing.T) {
	t.Parallel()
	require.Equal(t, gateway.Capabilities{Inquiry: true, RequestTimeout: 5 * time.Second}, smssim.New(nil).Capabilities())
}

// The provider sends the message and its answer is lost. Without keys, sending again would
// deliver it twice: Send asks by reference instead, finds it, and sends nothing more.
func TestLostAnswerSendsOneMessage(t *testing.T) {
	t.Parallel()
	s := smssim.New(nil)
	s.LoseNext(1)
	p := &traced{Provider: s}
	params := message(gateway.DeriveKey("order", "lost-answer"))
	var j gatewaytest.Journal

	msg, err := sms.Send(ctxFor(t), &j, p, params, fast)
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, msg.Status)
	require.Equal(t, params.Reference, msg.Reference)
	require.Equal(t, 1, s.Count(params.Reference), "one message, however the answer was lost")
	require.Equal(t, []string{"inquire", "send", "inquire"}, p.calls, "asked, not sent again")
	require.Equal(t, []phases.CallOutcome{phases.CallOutcomeSucceeded}, j.Outcomes())
	require.Equal(t, msg.ID, j.Calls()[0].ProviderID)
}

// A process that died after sending leaves a journal row without an outcome: the next
// execution asks first, finds the message, and sends nothing.
func TestResumeAfterCrashSendsNothing(t *testing.T) {
	t.Parallel()
	s := smssim.New(nil)
	params := message(gateway.DeriveKey("order", "crashed"))
	sent, err := s.Send(ctxFor(t), params) // the attempt before the crash
	require.NoError(t, err)
	var j gatewaytest.Journal
	now := time.Now()
	j.Add(phases.CallRecord{StartedAt: now, Deadline: now})
	p := &traced{Provider: s}

	msg, err := sms.Send(ctxFor(t), &j, p, params, fast)
	require.NoError(t, err)
	require.Equal(t, sent, msg)
	require.Equal(t, []string{"inquire"}, p.calls)
	require.Equal(t, 1, s.Count(params.Reference))
}

// A message found for the reference with another text or recipient is not the intent's: never
// taken for it, never sent over (the key parks for an operator).
func TestMessageForAnotherIntentIsAMismatch(t *testing.T) {
	t.Parallel()
	s := smssim.New(nil)
	ref := gateway.DeriveKey("order", "mismatch")
	other := message(ref)
	other.Text = "another text"
	_, err := s.Send(ctxFor(t), other)
	require.NoError(t, err)

	_, err = sms.Send(ctxFor(t), nil, s, message(ref), fast)
	require.ErrorIs(t, err, gateway.ErrCannotResolve)
	require.ErrorContains(t, err, "does not match the intent")
	require.True(t, phases.IsOutcomeUnknown(err))
	require.Equal(t, 1, s.Count(ref))
}

// Without inquiry (and without keys), a lost answer cannot be resolved: never guessed.
func TestWithoutInquiryALostAnswerParks(t *testing.T) {
	t.Parallel()
	off := false
	s := smssim.New(&smssim.Config{Inquiry: &off})
	s.LoseNext(1)
	params := message(gateway.DeriveKey("order", "no-inquiry"))

	_, err := sms.Send(ctxFor(t), nil, s, params, fast)
	require.ErrorIs(t, err, gateway.ErrCannotResolve)
	require.True(t, phases.IsOutcomeUnknown(err), "park, never compensate: the message may have gone out")
	require.Equal(t, 1, s.Count(params.Reference))
}
