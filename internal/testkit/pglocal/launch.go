package pglocal

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/pgsaga/pgsaga/internal/testkit/childproc"
)

// Launch is how a throwaway server's programs are run, the same for a cluster (Config) and a
// bouncer (BouncerConfig), which embed it: where its directory goes, as which user, where its
// lifecycle events go, and how long it may take to start and to stop.
type Launch struct {
	// BaseDir is where the server's directory is created. When the process is root it must be
	// traversable by RunAsUser.
	// Defaults to /dev/shm when it exists, is writable and has 1 GiB free, else os.TempDir().
	BaseDir string

	// Logger receives lifecycle events: start, stop, stale directories removed.
	// Defaults to a logger that discards everything.
	Logger *slog.Logger

	// StartTimeout bounds startup (initdb included, for a cluster), on top of the context given
	// to Start or StartBouncer. Defaults to 30s.
	StartTimeout time.Duration

	// StopTimeout is how long Stop waits for the server to exit (a fast shutdown for postgres,
	// SIGTERM for pgbouncer) before killing it. Defaults to 10s.
	StopTimeout time.Duration

	// RunAsUser is the user the server's programs (initdb and postgres, or pgbouncer) run as
	// when the process is root: they refuse to run as root. Ignored when it is not root: they
	// run as the current user.
	// Defaults to "postgres", or "nobody" when there is no "postgres" user.
	RunAsUser string
}

// withDefaults gives every unset field of l its default.
func (l *Launch) withDefaults() {
	if l.BaseDir == "" {
		l.BaseDir = defaultBaseDir()
	}
	if l.Logger == nil {
		l.Logger = slog.New(slog.DiscardHandler)
	}
	if l.StartTimeout == 0 {
		l.StartTimeout = 30 * time.Second
	}
	if l.StopTimeout == 0 {
		l.StopTimeout = 10 * time.Second
	}
}

func (l *Launch) validate() error {
	if l.StartTimeout < 0 {
		return fmt.Errorf("StartTimeout must not be negative, got %s", l.StartTimeout)
	}
	if l.StopTimeout < 0 {
		return fmt.Errorf("StopTimeout must not be negative, got %s", l.StopTimeout)
	}
	return nil
}

// newServerDir looks up the user the server runs as (RunAsUser) and creates the server's
// directory in BaseDir, given to that user: prefix<pid>-<random> (childproc.NewDir, which first
// removes the directories of dead processes, stop stopping what still runs in them).
func (l *Launch) newServerDir(prefix string, stop func(dir string) (keep bool)) (owner, string, error) {
	o, err := lookupOwner(l.RunAsUser)
	if err != nil {
		return owner{}, "", err
	}
	dir, err := childproc.NewDir(l.BaseDir, prefix, stop, l.Logger)
	if err != nil {
		return owner{}, "", fmt.Errorf("creating the directory: %w", err)
	}
	if err := o.chown(dir); err != nil {
		_ = os.RemoveAll(dir)
		return owner{}, "", err
	}
	return o, dir, nil
}
