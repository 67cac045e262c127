package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// EnvPause holds a program under test at named points until its test lets it go:
// "POINT=FILE[,POINT=FILE...]". A program that reaches POINT (see Pause) prints
// "chaos: paused at POINT" on its log and waits until FILE exists. The test waits for that
// line, breaks what it wants broken (stops the database, say) and creates FILE.
const EnvPause = "PGSAGA_CHAOS_PAUSE"

// pausePoll is how often a paused program looks for its release file.
const pausePoll = 10 * time.Millisecond

// PausedLine is the line a program prints on log when it pauses at point.
func PausedLine(point string) string { return "chaos: paused at " + point }

// Pause holds the calling program at point while $PGSAGA_CHAOS_PAUSE (read through getenv)
// names it: it prints PausedLine(point) on log and returns once the point's file exists, or
// with ctx's error when ctx ends first. It returns nil at once when the variable does not name
// point, and an error when the variable is malformed.
func Pause(ctx context.Context, getenv func(string) string, point string, log io.Writer) error {
	release, err := pauseFile(getenv(EnvPause), point)
	if err != nil || release == "" {
		return err
	}
	fmt.Fprintln(log, PausedLine(point))
	tick := time.NewTicker(pausePoll)
	defer tick.Stop()
	for {
		_, err := os.Stat(release)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("chaos: error looking for the release file of %q: %w", point, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: paused at %q until the context ended: %w", point, ctx.Err())
		case <-tick.C:
		}
	}
}

// pauseFile is the release file $PGSAGA_CHAOS_PAUSE (value) gives point; "" when it names
// none.
func pauseFile(value, point string) (string, error) {
	if strings.TrimSpace(value) == "" {
		return "", nil
	}
	for _, entry := range strings.Split(value, ",") {
		name, file, ok := strings.Cut(strings.TrimSpace(entry), "=")
		if !ok || name == "" || file == "" {
			return "", fmt.Errorf("chaos: %s: want POINT=FILE, got %q", EnvPause, entry)
		}
		if name == point {
			return file, nil
		}
	}
	return "", nil
}
