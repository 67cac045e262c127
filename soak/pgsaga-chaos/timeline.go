package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// timeline is the run's log of what the harness did and saw (faults, process starts and exits,
// phases of the run), each line stamped with the time since the run began. It goes to a file in
// the run's directory and, for progress, to Config.Progress; a violation's evidence quotes the
// events around its key's requests.
type timeline struct {
	begin    time.Time
	mu       sync.Mutex
	file     *os.File
	progress io.Writer
	events   []event
}

type event struct {
	at   time.Time
	text string
}

func newTimeline(path string, progress io.Writer) (*timeline, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("error creating the timeline: %w", err)
	}
	return &timeline{begin: time.Now(), file: f, progress: progress}, nil
}

// add records one event.
func (t *timeline) add(format string, args ...any) {
	now := time.Now()
	text := fmt.Sprintf(format, args...)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events = append(t.events, event{at: now, text: text})
	line := fmt.Sprintf("%9s  %s\n", t.offset(now), text)
	_, _ = io.WriteString(t.file, line)
	_, _ = io.WriteString(t.progress, line)
}

// offset is at as time since the run began, to the millisecond.
func (t *timeline) offset(at time.Time) string {
	return "+" + at.Sub(t.begin).Truncate(time.Millisecond).String()
}

// between returns the events from from to to, as lines.
func (t *timeline) between(from, to time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, e := range t.events {
		if !e.at.Before(from) && !e.at.After(to) {
			out = append(out, t.offset(e.at)+"  "+e.text)
		}
	}
	return out
}

func (t *timeline) close() error { return t.file.Close() }

// timelineWriter adds each line written to it to a timeline, after prefix: for a library's
// logger (one record per write).
type timelineWriter struct {
	tl     *timeline
	prefix string
}

func (w *timelineWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.tl.add("%s%s", w.prefix, line)
	}
	return len(p), nil
}
