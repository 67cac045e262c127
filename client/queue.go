package client

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// QueueState is where an intent stands in a [Queue].
type QueueState string

const (
	// QueueStatePending: the intent waits to be submitted, or was submitted
	// without a definitive answer. [Queue.Enqueue] puts it here; [Queue.Flush]
	// takes it out after a definitive answer (removing it on success, moving
	// it to held on rejection); [Queue.Remove] discards it.
	QueueStatePending QueueState = "pending"
	// QueueStateHeld: the server rejected the intent definitively (e.g. 422
	// amount_exceeds_balance, 402 card_declined), so resending it would get
	// the same answer. It is kept for a person to review rather than dropped.
	// [Queue.Flush] puts it here; only [Queue.Remove] takes it out.
	QueueStateHeld QueueState = "held"
)

// ErrQueueUnusable is returned by [OpenQueue] for a queue file it must not
// use, wrapped in an error that says why and what to do:
//
//   - another process (or another Queue in this process) has the file open.
//     A queue file has one owner at a time, so two flushes can never submit
//     from it concurrently.
//   - others than its owner may read or write it (any of the mode bits
//     0o077): the queue holds the intents' bodies and headers, and another
//     user who can write it could add intents that the owner's flush would
//     submit. chmod 600 it.
var ErrQueueUnusable = errors.New("queue file cannot be used")

// ErrAlreadyQueued is returned by [Queue.Enqueue] when an intent with the
// same key is already in the queue (pending or held).
var ErrAlreadyQueued = errors.New("an intent with this key is already queued")

// ErrNotQueued is returned by [Queue.Remove] when no intent has the key.
var ErrNotQueued = errors.New("no queued intent has this key")

// QueuedIntent is an intent as the queue stores it.
type QueuedIntent struct {
	// Intent is the intent, key included, exactly as enqueued.
	Intent Intent `json:"intent"`
	// Seq orders the queue: intents are submitted and listed by ascending Seq.
	Seq uint64 `json:"seq"`
	// State is pending or held.
	State QueueState `json:"state"`
	// EnqueuedAt is when the intent was enqueued.
	EnqueuedAt time.Time `json:"enqueued_at"`
	// Attempts counts the requests sent for this intent by flushes whose
	// Submit returned; requests from a flush that was killed mid-submit are
	// not counted.
	Attempts int `json:"attempts"`
	// LastAttemptAt is when a flush last finished submitting it, or zero.
	LastAttemptAt time.Time `json:"last_attempt_at,omitzero"`
	// LastStatus is the last HTTP status received, or 0.
	LastStatus int `json:"last_status,omitempty"`
	// LastCode is the error code of the last answer, e.g.
	// "idempotency_key_reused", or "".
	LastCode string `json:"last_code,omitempty"`
	// LastError describes the last failure: why a pending intent's outcome
	// is unknown, or why a held intent was rejected.
	LastError string `json:"last_error,omitempty"`
}

// QueueOpts are optional settings for [OpenQueue].
type QueueOpts struct {
	// LockTimeout is how long OpenQueue waits for another process to release
	// the queue file before failing with [ErrQueueUnusable]. Defaults to 1s.
	LockTimeout time.Duration
	// Now is the clock for EnqueuedAt and LastAttemptAt. Defaults to
	// time.Now.
	Now func() time.Time
}

// FlushResult counts what one [Queue.Flush] did.
type FlushResult struct {
	// Succeeded is how many intents got a 2xx answer and were removed.
	Succeeded int
	// Held is how many intents were rejected and moved to held.
	Held int
	// Pending is how many intents are still pending after the flush.
	Pending int
}

var (
	bucketPending = []byte("pending")
	bucketHeld    = []byte("held")
	bucketKeys    = []byte("keys") // intent key -> seq, for both states
)

// Queue is a durable, ordered queue of intents in a bbolt file.
//
// Guarantees: Enqueue returns only once the intent and its key are fsynced.
// Flush submits pending intents in order and removes or holds one only after
// a definitive answer, committing that before moving to the next. Killed at
// any moment, it leaves every intent without a committed answer pending with
// its key, so the next Flush resubmits it with the same key and the server's
// de-duplication makes its effect happen once. One process owns the file at
// a time (bbolt's exclusive file lock).
//
// A Queue is safe for concurrent use; concurrent Flush calls run one at a
// time.
type Queue struct {
	db      *bolt.DB
	now     func() time.Time
	flushMu sync.Mutex
}

// OpenQueue opens the queue file at path, creating it (mode 0600) if needed.
// It fails with [ErrQueueUnusable] for an existing file that others than its
// owner may read or write, and if another process holds the file longer than
// opts.LockTimeout. opts may be nil.
func OpenQueue(path string, opts *QueueOpts) (*Queue, error) {
	if opts == nil {
		opts = &QueueOpts{}
	}
	lockTimeout := opts.LockTimeout
	if lockTimeout <= 0 {
		lockTimeout = time.Second
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}

	if err := checkQueueFileMode(path); err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("%w: %s is locked by another process (waited %s)", ErrQueueUnusable, path, lockTimeout)
		}
		return nil, fmt.Errorf("error opening queue %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketPending, bucketHeld, bucketKeys} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("error initializing queue %s: %w", path, err)
	}
	return &Queue{db: db, now: now}, nil
}

// checkQueueFileMode refuses an existing queue file with any of the mode bits
// 0o077 set. A missing file is fine: bbolt creates it 0600. Windows has no
// such bits to check.
func checkQueueFileMode(path string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("error opening queue %s: %w", path, err)
	}
	if mode := info.Mode().Perm(); mode&0o077 != 0 {
		return fmt.Errorf("%w: others may read or write it: %s has mode %04o; run chmod 600 %s", ErrQueueUnusable, path, mode, path)
	}
	return nil
}

// Close releases the queue file.
func (q *Queue) Close() error { return q.db.Close() }

// Enqueue validates the intent and appends it to the queue as pending. It
// returns after the commit is on disk, so the intent and its key survive a
// crash from then on. It fails with [ErrAlreadyQueued] if the key is queued.
func (q *Queue) Enqueue(intent *Intent) error {
	if err := intent.Validate(); err != nil {
		return err
	}
	err := q.db.Update(func(tx *bolt.Tx) error {
		keys := tx.Bucket(bucketKeys)
		if keys.Get([]byte(intent.Key)) != nil {
			return fmt.Errorf("%w: %s", ErrAlreadyQueued, intent.Key)
		}
		pending := tx.Bucket(bucketPending)
		seq, err := pending.NextSequence()
		if err != nil {
			return err
		}
		item := QueuedIntent{
			Intent:     *intent,
			Seq:        seq,
			State:      QueueStatePending,
			EnqueuedAt: q.now().UTC(),
		}
		if err := putItem(pending, &item); err != nil {
			return err
		}
		return keys.Put([]byte(intent.Key), seqBytes(seq))
	})
	if err != nil {
		return fmt.Errorf("error enqueuing intent: %w", err)
	}
	return nil
}

// List returns every queued intent, pending and held, in enqueue order.
func (q *Queue) List() ([]QueuedIntent, error) {
	var items []QueuedIntent
	err := q.db.View(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketPending, bucketHeld} {
			err := tx.Bucket(name).ForEach(func(_, v []byte) error {
				var item QueuedIntent
				if err := json.Unmarshal(v, &item); err != nil {
					return fmt.Errorf("error decoding queued intent: %w", err)
				}
				items = append(items, item)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("error listing queue: %w", err)
	}
	slices.SortFunc(items, func(a, b QueuedIntent) int { return cmp.Compare(a.Seq, b.Seq) })
	return items, nil
}

// Remove discards the intent with the given key, pending or held. Removing
// a pending intent that was already sent does not undo it on the server.
func (q *Queue) Remove(key string) error {
	err := q.db.Update(func(tx *bolt.Tx) error {
		keys := tx.Bucket(bucketKeys)
		seq := keys.Get([]byte(key))
		if seq == nil {
			return fmt.Errorf("%w: %s", ErrNotQueued, key)
		}
		if err := tx.Bucket(bucketPending).Delete(seq); err != nil {
			return err
		}
		if err := tx.Bucket(bucketHeld).Delete(seq); err != nil {
			return err
		}
		return keys.Delete([]byte(key))
	})
	if err != nil {
		return fmt.Errorf("error removing intent: %w", err)
	}
	return nil
}

// Flush submits pending intents in order with client, and calls report (if
// not nil) after each intent's new state is committed:
//
//   - 2xx (first execution or replay): the intent is removed; report gets a
//     nil error and the intent's last stored copy.
//   - definitive rejection ([*RejectedError]), or an intent that can never be
//     sent ([ErrInvalidIntent]): it moves to held, out of the way of the
//     intents behind it; report gets that error and an item in state held.
//   - anything else (outcome unknown, ctx done): it stays pending with its
//     key and updated attempt count, report gets the error, and Flush stops
//     there so that later intents never overtake it. Flush returns the
//     error, wrapped.
//
// Intents enqueued while Flush runs are submitted in the same flush. The
// result counts what happened, and Pending is what is left.
func (q *Queue) Flush(ctx context.Context, client *Client, report func(QueuedIntent, *Result, error)) (FlushResult, error) {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()

	var res FlushResult
	for {
		item, ok, err := q.firstPending()
		if err != nil {
			return q.withPending(res), err
		}
		if !ok {
			return q.withPending(res), nil
		}

		result, submitErr := client.Submit(ctx, &item.Intent)
		item.LastAttemptAt = q.now().UTC()
		item.LastStatus, item.LastCode, item.LastError = 0, "", ""
		if result != nil {
			item.Attempts += result.Attempts
			item.LastStatus = result.Status
			item.LastCode = result.ErrorCode()
		}
		if submitErr != nil {
			item.LastError = submitErr.Error()
		}

		switch {
		case submitErr == nil:
			err = q.settle(&item, nil)
			res.Succeeded++
		case errors.As(submitErr, new(*RejectedError)), errors.Is(submitErr, ErrInvalidIntent):
			item.State = QueueStateHeld
			err = q.settle(&item, bucketHeld)
			res.Held++
		default:
			err = q.settle(&item, bucketPending)
		}
		if err != nil {
			return q.withPending(res), fmt.Errorf("error recording the answer for intent %s: %w", item.Intent.Key, err)
		}
		if report != nil {
			report(item, result, submitErr)
		}
		if item.State == QueueStatePending && submitErr != nil {
			return q.withPending(res), fmt.Errorf("flush stopped at intent %s: %w", item.Intent.Key, submitErr)
		}
	}
}

// firstPending returns the pending intent with the lowest Seq.
func (q *Queue) firstPending() (item QueuedIntent, ok bool, err error) {
	err = q.db.View(func(tx *bolt.Tx) error {
		_, v := tx.Bucket(bucketPending).Cursor().First()
		if v == nil {
			return nil
		}
		ok = true
		return json.Unmarshal(v, &item)
	})
	if err != nil {
		return item, false, fmt.Errorf("error reading queue: %w", err)
	}
	return item, ok, nil
}

// settle commits an intent's new state in one transaction: into bucket to
// (pending: updated in place; held: moved), or removed when to is nil.
func (q *Queue) settle(item *QueuedIntent, to []byte) error {
	return q.db.Update(func(tx *bolt.Tx) error {
		seq := seqBytes(item.Seq)
		if to == nil || !slices.Equal(to, bucketPending) {
			if err := tx.Bucket(bucketPending).Delete(seq); err != nil {
				return err
			}
		}
		if to == nil {
			return tx.Bucket(bucketKeys).Delete([]byte(item.Intent.Key))
		}
		return putItem(tx.Bucket(to), item)
	})
}

// withPending fills in how many intents are still pending.
func (q *Queue) withPending(res FlushResult) FlushResult {
	_ = q.db.View(func(tx *bolt.Tx) error {
		res.Pending = tx.Bucket(bucketPending).Stats().KeyN
		return nil
	})
	return res
}

func putItem(b *bolt.Bucket, item *QueuedIntent) error {
	v, err := json.Marshal(item)
	if err != nil {
		return fmt.Errorf("error encoding queued intent: %w", err)
	}
	return b.Put(seqBytes(item.Seq), v)
}

// seqBytes encodes seq big-endian so that bbolt's byte order is enqueue
// order.
func seqBytes(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }
