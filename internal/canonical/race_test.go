//go:build race

package canonical

// raceEnabled: under the race detector sync.Pool drops items at random, so pooled allocation
// counts are not deterministic.
const raceEnabled = true
