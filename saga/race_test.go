//go:build race

package saga

// raceEnabled: under the race detector sync.Pool drops items at random, so allocation counts
// are not deterministic.
const raceEnabled = true
