package effectsim_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/effectsim"
	"github.com/pgsaga/pgsaga/gateway/gatewaytest"
	"github.com/pgsaga/pgsaga/phases"
)

// note is the smallest effect: a text under a key, which is its reference too.
type note struct{ Key, Text string }

type posted struct {
	ID, Key, Text string
	Status        gateway.Status
}

var notes = &gateway.Kind[note, posted]{
	Name:    "note",
	Keys:    func(n note) (string, string) { return n.Key, n.Key },
	Verdict: func(p *posted) (string, gateway.Status) { return p.ID, p.Status },
	Match: func(n note, p *posted) error {
		if p.Key != n.Key || p.Text != n.Text {
			return fmt.Errorf("it is %q under %q", p.Text, p.Key)
		}
		return nil
	},
	Recorded: func(n note, id string, s gateway.Status) *posted {
		return &posted{ID: id, Key: n.Key, Text: n.Text, Status: s}
	},
}

func config(change func(*effectsim.Config[note, posted])) *effectsim.Config[note, posted] {
	cfg := &effectsim.Config[note, posted]{
		Kind: notes,
		Make: func(n note, id string, s gateway.Status, _ time.Time) posted {
			return posted{ID: id, Key: n.Key, Text: n.Text, Status: s}
		},
		Validate: func(n note) error {
			if n.Text == "" {
				return errors.New("text is required")
			}
			return nil
		},
		Declines: func(n note) bool { return n.Text == "no" },
	}
	if change != nil {
		change(cfg)
	}
	return cfg
}

func TestConformance(t *testing.T) {
	t.Parallel()
	for name, idempotency := range map[string]bool{"keys and inquiry": true, "inquiry only": false} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			with := func(change func(*effectsim.Config[note, posted])) *effectsim.Simulator[note, posted] {
				return effectsim.New(config(func(c *effectsim.Config[note, posted]) {
					c.Idempotency = &idempotency
					if change != nil {
						change(c)
					}
				}))
			}
			s := with(nil)
			gatewaytest.RunEffect(t, func(*testing.T) gateway.Effect[note, posted] { return s }, &gatewaytest.EffectOpts[note, posted]{
				NewParams: func(ref string) note { return note{Key: ref, Text: "hello"} },
				Invalid:   func(ref string) note { return note{Key: ref} },
				Count:     s.Count,
				Declining: func(t *testing.T, ref string) (gateway.Effect[note, posted], note) {
					return with(nil), note{Key: ref, Text: "no"}
				},
				Slow: func(t *testing.T) gateway.Effect[note, posted] {
					return with(func(c *effectsim.Config[note, posted]) { c.Latency = time.Minute })
				},
				Pending: func(t *testing.T) (gateway.Effect[note, posted], func(string) int) {
					s := with(func(c *effectsim.Config[note, posted]) { c.PendingFor = 300 * time.Millisecond })
					s.PendingNext(1)
					return s, s.Count
				},
				Lossy: func(t *testing.T) (gateway.Effect[note, posted], func(string) int) {
					s := with(nil)
					s.LoseNext(1)
					return s, s.Count
				},
				Hanging: func(t *testing.T) (gateway.Effect[note, posted], func(string) int) {
					s := with(func(c *effectsim.Config[note, posted]) { c.RequestTimeout = 200 * time.Millisecond })
					s.HangNext(1)
					return s, s.Count
				},
				InFlight: func(t *testing.T, hold time.Duration) (gateway.Effect[note, posted], func(string) int) {
					s := with(func(c *effectsim.Config[note, posted]) { c.LatencyBefore = hold })
					return s, s.Count
				},
			})
		})
	}
}

func TestValidateNamesTheField(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		cfg  *effectsim.Config[note, posted]
		want string
	}{
		"nil":            {nil, "Config is required"},
		"no kind":        {config(func(c *effectsim.Config[note, posted]) { c.Kind = nil }), "Kind is required"},
		"no make":        {config(func(c *effectsim.Config[note, posted]) { c.Make = nil }), "Make is required"},
		"negative":       {config(func(c *effectsim.Config[note, posted]) { c.RequestTimeout = -1 }), "RequestTimeout must be >= 0"},
		"probability":    {config(func(c *effectsim.Config[note, posted]) { c.FailBefore = 2 }), "FailBefore must be a probability"},
		"latency before": {config(func(c *effectsim.Config[note, posted]) { c.LatencyBefore = -time.Second }), "LatencyBefore must be >= 0"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.ErrorContains(t, effectsim.Validate(tc.cfg), tc.want)
		})
	}
	require.NoError(t, effectsim.Validate(config(nil)))
	require.Panics(t, func() { effectsim.New(config(func(c *effectsim.Config[note, posted]) { c.Kind = nil })) })
}

// A key re-sent with another request is answered as unknown, never as a refusal the engine
// would compensate: the first request under it was made.
func TestKeyReusedWithAnotherRequestIsUnknown(t *testing.T) {
	t.Parallel()
	s := effectsim.New(config(nil))
	ctx := context.Background()
	_, err := s.Send(ctx, note{Key: "k1", Text: "first"})
	require.NoError(t, err)
	_, err = s.Send(ctx, note{Key: "k1", Text: "second"})
	require.ErrorIs(t, err, effectsim.ErrKeyReused)
	require.Equal(t, phases.CallOutcomeUnknown, notes.Classify(nil, err))
	require.Equal(t, 1, s.Count("k1"))
}

func TestFailNextDoesNothing(t *testing.T) {
	t.Parallel()
	s := effectsim.New(config(nil))
	s.FailNext(1)
	_, err := s.Send(context.Background(), note{Key: "k", Text: "x"})
	require.ErrorIs(t, err, effectsim.ErrUnavailable)
	require.Equal(t, phases.CallOutcomeFailedBefore, notes.Classify(nil, err))
	require.Zero(t, s.Count("k"))
	r, err := s.Send(context.Background(), note{Key: "k", Text: "x"})
	require.NoError(t, err)
	require.Equal(t, []posted{*r}, s.Records())
}

func TestSetFaultsRefusesOutOfRange(t *testing.T) {
	t.Parallel()
	s := effectsim.New(config(nil))
	require.ErrorContains(t, s.SetFaults(func(f *effectsim.Faults) { f.LoseResponse = -0.5 }), "LoseResponse must be a probability")
	require.NoError(t, s.SetFaults(func(f *effectsim.Faults) { f.LatencyBefore = time.Second }))
	require.Equal(t, time.Second, s.Capabilities().MaxInFlight)
}
