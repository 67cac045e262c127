package worker_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// logRecords keeps every record a logger at debug receives.
type logRecords struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }

func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r)
	return nil
}

func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecords) WithGroup(string) slog.Handler      { return l }

// levelOf is the level of the first record whose message ends with suffix, and whether there is
// one.
func (l *logRecords) levelOf(suffix string) (slog.Level, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.records {
		if strings.HasSuffix(r.Message, suffix) {
			return r.Level, true
		}
	}
	return 0, false
}

// River reports its producers' job counts every 5s while jobs run: the worker's logger gets
// them at debug, so an info log stays quiet. Its other lines keep their levels.
func TestRiverJobCountsAreDebug(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits for River's 5s report; skipped with -short")
	}
	db := dbtest.NewDB(t)
	createEffectTable(t, db.Pool)
	logs := &logRecords{}
	c := newClient(t, db.Pool, &saga.Config{Operations: []*phases.Operation{newEffects().Operation(nil)}})
	startWorker(t, &worker.Config{Pool: db.Pool, Client: c, Logger: slog.New(logs)})
	seedCrashed(t, db.Pool, "log", 1) // a resume job: the counts change

	waitFor(t, "River's job counts", 30*time.Second, func() bool {
		_, found := logs.levelOf(": Producer job counts")
		return found
	})
	level, _ := logs.levelOf(": Producer job counts")
	require.Equal(t, slog.LevelDebug, level)
	level, found := logs.levelOf("River client started")
	require.True(t, found)
	require.Equal(t, slog.LevelInfo, level, "River's other lines keep their levels")
}

// Through a text logger at info, River's periodic reports (job counts, a maintenance pass)
// write nothing; at debug they are written at DEBUG; River's other lines pass as they are.
func TestRiverChatterAtDebug(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		msg   string
		level slog.Level
		info  string // what an info logger writes
		debug string // what a debug logger writes
	}{
		{"producer: Producer job counts", slog.LevelInfo, "", "level=DEBUG"},
		{"JobCleaner: Ran successfully", slog.LevelInfo, "", "level=DEBUG"},
		{"River client started", slog.LevelInfo, "level=INFO", "level=INFO"},
		{"jobexecutor.JobExecutor: Job errored; retrying", slog.LevelInfo, "level=INFO", "level=INFO"},
		{"producer: Error fetching jobs", slog.LevelError, "level=ERROR", "level=ERROR"},
	} {
		for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
			var out bytes.Buffer
			logger := worker.RiverLogger(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: level})))
			logger.With("queue", "q").Log(t.Context(), tc.level, tc.msg)
			want := tc.info
			if level == slog.LevelDebug {
				want = tc.debug
			}
			if want == "" {
				require.Empty(t, out.String(), tc.msg)
				continue
			}
			require.Contains(t, out.String(), want, tc.msg)
			require.Contains(t, out.String(), "queue=q", tc.msg)
		}
	}
}
