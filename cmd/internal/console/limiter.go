package console

import (
	"sync"
	"time"
)

// Sign-in throttling. A token carries 256 random bits, so guessing one is hopeless; the limits
// are there to make a guessing run loud and slow, not to make tokens safe. Two limits, both in
// this process's memory:
//
//   - Per client address (Config.ClientAddr: the peer, or behind a trusted proxy the client it
//     names): after MaxFailedSignIns failed sign-ins (a login form or a Bearer request with a
//     wrong token) from one address within SignInWindow, every further attempt from it (a right
//     token included) is answered 429 until the oldest of those failures is older than the
//     window. Refused attempts are not evaluated, so they do not extend the block: an address
//     gets at most MaxFailedSignIns guesses per window, and locks out nobody but itself.
//   - Per operator name, when a login form names an operator who can sign in (a name that is
//     no operator's is not counted: it may be a token typed into the wrong field): after
//     nameFreeFailures failures naming it, each further failure locks the name for twice as
//     long as the last (1s, 2s, 4s, … up to nameMaxLock), from any address; a success clears
//     it. This slows a guessing run spread over many addresses against one operator. A form
//     need not name anyone, so a locked name does not lock its operator out: signing in with
//     the token alone still works.
//
// Both maps are bounded: entries whose time has passed are dropped, and when a map is full the
// entry that would free soonest goes first.

const (
	// nameFreeFailures is how many failures naming an operator go before the backoff starts.
	nameFreeFailures = 5
	// nameMaxLock caps the lock of an operator name.
	nameMaxLock = 15 * time.Minute
	// nameForget is how long after its last failure a name's count starts again from zero.
	nameForget = time.Hour
	// maxLimiterEntries bounds each map of the limiter.
	maxLimiterEntries = 10000
)

// signInLimiter counts failed sign-ins by address and by operator name.
type signInLimiter struct {
	max    int
	window time.Duration
	now    func() time.Time

	mu sync.Mutex
	// byAddr holds each address's failures within the window, oldest first (at most max).
	byAddr map[string][]time.Time
	byName map[string]*nameFailures
}

type nameFailures struct {
	count int
	last  time.Time
	until time.Time
}

func newSignInLimiter(max int, window time.Duration, now func() time.Time) *signInLimiter {
	return &signInLimiter{max: max, window: window, now: now,
		byAddr: map[string][]time.Time{}, byName: map[string]*nameFailures{}}
}

// blocked reports how long sign-ins from addr (and, when not empty, naming name) must wait; 0
// lets the attempt be evaluated. locked is name when the name is locked (it was counted, so it
// is an operator's), else "".
func (l *signInLimiter) blocked(addr, name string) (wait time.Duration, locked string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if times := l.recentLocked(addr, now); len(times) >= l.max {
		wait = times[0].Add(l.window).Sub(now)
	}
	if n := l.byName[name]; name != "" && n != nil && now.Before(n.until) {
		wait, locked = max(wait, n.until.Sub(now)), name
	}
	return wait, locked
}

// failed records a failed sign-in from addr, naming name when it is not empty.
func (l *signInLimiter) failed(addr, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	times := append(l.recentLocked(addr, now), now)
	if len(times) > l.max {
		times = times[len(times)-l.max:]
	}
	if _, ok := l.byAddr[addr]; !ok && len(l.byAddr) >= maxLimiterEntries {
		l.pruneAddrsLocked(now)
	}
	l.byAddr[addr] = times

	if name == "" {
		return
	}
	n := l.byName[name]
	if n == nil || now.Sub(n.last) > nameForget {
		if n == nil && len(l.byName) >= maxLimiterEntries {
			l.pruneNamesLocked(now)
		}
		n = &nameFailures{}
		l.byName[name] = n
	}
	n.count++
	n.last = now
	if over := n.count - nameFreeFailures; over > 0 {
		lock := nameMaxLock
		if over <= 20 {
			lock = min(time.Second<<(over-1), nameMaxLock)
		}
		n.until = now.Add(lock)
	}
}

// succeeded clears name's failures after a sign-in that named it.
func (l *signInLimiter) succeeded(name string) {
	if name == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.byName, name)
}

// recentLocked is addr's failures within the window, dropping older ones.
func (l *signInLimiter) recentLocked(addr string, now time.Time) []time.Time {
	times := l.byAddr[addr]
	i := 0
	for i < len(times) && !now.Before(times[i].Add(l.window)) {
		i++
	}
	if i == len(times) {
		delete(l.byAddr, addr)
		return nil
	}
	times = times[i:]
	l.byAddr[addr] = times
	return times
}

// pruneAddrsLocked drops the addresses with no failure in the window; if none, the one whose
// failures are oldest.
func (l *signInLimiter) pruneAddrsLocked(now time.Time) {
	var (
		oldest   string
		oldestAt time.Time
	)
	for addr, times := range l.byAddr {
		last := times[len(times)-1]
		if !now.Before(last.Add(l.window)) {
			delete(l.byAddr, addr)
			continue
		}
		if oldest == "" || last.Before(oldestAt) {
			oldest, oldestAt = addr, last
		}
	}
	if len(l.byAddr) >= maxLimiterEntries {
		delete(l.byAddr, oldest)
	}
}

// pruneNamesLocked drops the names that are not locked and were forgotten; if none, the one
// whose lock ends first.
func (l *signInLimiter) pruneNamesLocked(now time.Time) {
	var (
		first   string
		firstAt time.Time
	)
	for name, n := range l.byName {
		if !now.Before(n.until) && now.Sub(n.last) > nameForget {
			delete(l.byName, name)
			continue
		}
		if first == "" || n.until.Before(firstAt) {
			first, firstAt = name, n.until
		}
	}
	if len(l.byName) >= maxLimiterEntries {
		delete(l.byName, first)
	}
}
