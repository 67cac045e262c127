// Package faults draws the faults a simulated provider injects into one request. The charge
// simulator (gateway/sim) and the effect simulator (gateway/effectsim) draw them here, in one
// order, so that a seed replays the same faults in both.
package faults

import (
	"math/rand/v2"
	"time"
)

// Dice is a simulator's random source and its scripted faults: the next n requests fail, lose
// their answer, hang or are made pending, whatever the probabilities say. It is not safe for
// concurrent use: its simulator's lock guards it.
type Dice struct {
	rng                                       *rand.Rand
	FailNext, LoseNext, HangNext, PendingNext int
}

// New returns dice seeded with seed.
func New(seed uint64) *Dice {
	return &Dice{rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}
}

// Hold is how long a request is held before it lands: before plus a jitter, none when before
// is 0.
func (d *Dice) Hold(before, jitter time.Duration) time.Duration {
	if before <= 0 {
		return 0
	}
	return before + d.jitter(jitter)
}

// FailsBefore reports whether a request is refused before the provider acts: scripted by
// FailNext, else with probability p.
func (d *Dice) FailsBefore(p float64) bool {
	return d.scripted(&d.FailNext) || d.chance(p)
}

// Pending reports whether an effect is made pending: scripted by PendingNext, else with
// probability p.
func (d *Dice) Pending(p float64) bool {
	return d.scripted(&d.PendingNext) || d.chance(p)
}

// Answer is what becomes of the answer to a request the provider acted on.
type Answer struct {
	// Delay is how long the answer is held back.
	Delay time.Duration
	// Hang holds the answer until the caller gives up.
	Hang bool
	// Lose drops the answer.
	Lose bool
}

// Answer draws the answer's delay (latency plus a jitter), then whether it hangs (HangNext)
// or is lost (LoseNext, else with probability lose).
func (d *Dice) Answer(latency, jitter time.Duration, lose float64) Answer {
	a := Answer{Delay: latency + d.jitter(jitter)}
	switch {
	case d.scripted(&d.HangNext):
		a.Hang = true
	case d.scripted(&d.LoseNext):
		a.Lose = true
	default:
		a.Lose = d.chance(lose)
	}
	return a
}

// scripted takes one from a scripted count, false when none is left.
func (d *Dice) scripted(next *int) bool {
	if *next <= 0 {
		return false
	}
	*next--
	return true
}

// chance draws true with probability p; nothing is drawn when p is 0.
func (d *Dice) chance(p float64) bool { return p > 0 && d.rng.Float64() < p }

// jitter draws a uniform 0..max.
func (d *Dice) jitter(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return time.Duration(d.rng.Int64N(int64(max) + 1))
}
