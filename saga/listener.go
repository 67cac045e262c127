package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// listener is a client's one listening session: a connection of its own, opened outside the
// pool from the pool's connection settings, that LISTENs on notifyChannel for every duplicate of
// the process waiting for an execution in flight. It runs while at least one duplicate waits and
// closes when the last one leaves, so a process where nobody waits holds no extra connection.
type listener struct {
	pool   *pgxpool.Pool
	logger *slog.Logger

	mu sync.Mutex
	// session is the session serving the current waiters; nil while nobody waits.
	session *listenSession
	// waiting are the current waiters by key.
	waiting map[waitedKey]map[*keyWaiter]struct{}
	count   int
}

// waitedKey names a key waited for, as the notification carries it.
type waitedKey struct{ tenant, actor, key string }

// listenSession is one opening of the listening connection.
type listenSession struct {
	// ready is closed once LISTEN is in place, or once the session failed to get there (err).
	ready  chan struct{}
	err    error
	cancel context.CancelFunc
}

// keyWaiter is one duplicate waiting for a key.
type keyWaiter struct {
	key     waitedKey
	session *listenSession
	// woken receives when the key was notified, or when the session serving the waiter failed
	// (the waiter then reads the key, and waits no more).
	woken chan struct{}
}

// errListenerDown is a listening session that could not be opened, or broke.
var errListenerDown = errors.New("the listening session is down")

// listenConnectTimeout bounds the opening of the listening session; a waiter that does not see it
// ready in time polls instead.
const listenConnectTimeout = 5 * time.Second

func newListener(pool *pgxpool.Pool, logger *slog.Logger) *listener {
	return &listener{pool: pool, logger: logger, waiting: map[waitedKey]map[*keyWaiter]struct{}{}}
}

// join registers a waiter for key, opening the listening session if none is open.
func (l *listener) join(scope Scope, key string) *keyWaiter {
	w := &keyWaiter{key: waitedKey{scope.Tenant, scope.Actor, key}, woken: make(chan struct{}, 1)}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.session == nil {
		ctx, cancel := context.WithCancel(context.Background())
		l.session = &listenSession{ready: make(chan struct{}), cancel: cancel}
		go l.serve(ctx, l.session)
	}
	w.session = l.session
	if l.waiting[w.key] == nil {
		l.waiting[w.key] = map[*keyWaiter]struct{}{}
	}
	l.waiting[w.key][w] = struct{}{}
	l.count++
	return w
}

// leave removes a waiter; the last one to leave closes the session.
func (l *listener) leave(w *keyWaiter) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.waiting[w.key], w)
	if len(l.waiting[w.key]) == 0 {
		delete(l.waiting, w.key)
	}
	l.count--
	if l.count == 0 && l.session != nil {
		l.session.cancel()
		l.session = nil
	}
}

// serve opens s's connection, LISTENs, and hands each notification to the waiters of its key
// until s is cancelled. If the connection breaks, every waiter it served is woken: each reads its
// key, and a waiter that joins later opens a new session.
func (l *listener) serve(ctx context.Context, s *listenSession) {
	conn, err := l.open(ctx)
	if err != nil {
		s.err = fmt.Errorf("%w: %w", errListenerDown, err)
		close(s.ready)
		l.drop(s)
		return
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	close(s.ready)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() == nil {
				l.logger.WarnContext(ctx, "the session listening for requests in flight broke; its waiters read their keys", "error", err)
				l.drop(s)
			}
			return
		}
		var got []string
		if json.Unmarshal([]byte(n.Payload), &got) == nil && len(got) == 3 {
			l.wake(waitedKey{got[0], got[1], got[2]}, nil)
		}
	}
}

// open connects with the pool's settings, outside the pool, and LISTENs.
func (l *listener) open(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, listenConnectTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, l.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return conn, nil
}

// drop forgets s, failed, and wakes every waiter it served.
func (l *listener) drop(s *listenSession) {
	l.mu.Lock()
	if l.session == s {
		l.session = nil
	}
	l.mu.Unlock()
	for _, key := range l.keys() {
		l.wake(key, s)
	}
}

func (l *listener) keys() []waitedKey {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]waitedKey, 0, len(l.waiting))
	for k := range l.waiting {
		keys = append(keys, k)
	}
	return keys
}

// wake signals the waiters of key (only those s served, when s is not nil).
func (l *listener) wake(key waitedKey, s *listenSession) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for w := range l.waiting[key] {
		if s != nil && w.session != s {
			continue
		}
		select {
		case w.woken <- struct{}{}:
		default:
		}
	}
}

// listening waits up to d for w's session to LISTEN; errListenerDown when it cannot.
func (w *keyWaiter) listening(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(max(min(d, listenConnectTimeout), 0))
	defer timer.Stop()
	select {
	case <-w.session.ready:
		return w.session.err
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-timer.C:
		return fmt.Errorf("%w: not listening after %s", errListenerDown, min(d, listenConnectTimeout))
	}
}

// wait waits up to d for w's key to be notified (or its session to fail); it returns ctx's error
// when ctx ends first.
func (w *keyWaiter) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-w.woken:
		return nil
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
