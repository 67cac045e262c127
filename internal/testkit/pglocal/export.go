package pglocal

import (
	"path/filepath"
	"syscall"
)

// Owner is the user a throwaway server runs as: the current user, or when the process is root
// an unprivileged one, since PostgreSQL refuses to run as root. Other launchers of PostgreSQL
// (a replicated pair under a failover manager) run their processes the same way.
type Owner struct {
	// Name is the user's name (or uid, when it has none).
	Name string
	// UID and GID are the user's ids.
	UID, GID int
	// Switch is whether children must switch to UID and GID: the process is root.
	Switch bool
}

// LookupOwner returns the user to run PostgreSQL as, as Start does for Config.RunAsUser runAs:
// the current user, or when the process is root runAs (default "postgres", then "nobody").
func LookupOwner(runAs string) (Owner, error) {
	o, err := lookupOwner(runAs)
	if err != nil {
		return Owner{}, err
	}
	return Owner{Name: o.name, UID: o.uid, GID: o.gid, Switch: o.switchTo}, nil
}

// Chown gives path to the owner, when children switch users.
func (o Owner) Chown(path string) error { return o.owner().chown(path) }

func (o Owner) owner() owner { return owner{name: o.Name, uid: o.UID, gid: o.GID, switchTo: o.Switch} }

// Credential is the credential a child must run with, or nil when it runs as the current user.
func (o Owner) Credential() *syscall.Credential { return o.owner().credential() }

// FindBinDir returns the directory of the PostgreSQL server binaries that Start uses for
// Config.BinDir binDir: binDir itself, or when empty the directory of initdb in PATH, else the
// highest-versioned /usr/lib/postgresql/*/bin.
func FindBinDir(binDir string) (string, error) {
	b, err := findBinaries(binDir, debianBinDirs)
	if err != nil {
		return "", err
	}
	return filepath.Dir(b.postgres), nil
}

// DefaultBaseDir is where Start puts clusters when Config.BaseDir is empty: /dev/shm when it is
// a writable directory with 1 GiB free, else os.TempDir().
func DefaultBaseDir() string { return defaultBaseDir() }
