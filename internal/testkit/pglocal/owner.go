package pglocal

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// owner is the user initdb and postgres run as.
type owner struct {
	name     string
	uid, gid int
	switchTo bool // whether the children must switch to uid/gid (we are root)
}

// lookupOwner returns the user to run PostgreSQL as: the current user, or when we are root
// runAs (default "postgres", then "nobody"), since PostgreSQL refuses to run as root.
func lookupOwner(runAs string) (owner, error) {
	if os.Geteuid() != 0 {
		name := strconv.Itoa(os.Geteuid())
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
		return owner{name: name, uid: os.Geteuid(), gid: os.Getegid()}, nil
	}
	candidates := []string{runAs}
	if runAs == "" {
		candidates = []string{"postgres", "nobody"}
	}
	for _, name := range candidates {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err1 != nil || err2 != nil {
			continue
		}
		return owner{name: name, uid: uid, gid: gid, switchTo: true}, nil
	}
	return owner{}, fmt.Errorf("running as root and no user %v to run PostgreSQL as (it refuses to run as root): "+
		"create one (useradd postgres) or set Config.RunAsUser", candidates)
}

// credential is the credential the children run with, or nil when they run as the current user.
func (o owner) credential() *syscall.Credential {
	if !o.switchTo {
		return nil
	}
	return &syscall.Credential{Uid: uint32(o.uid), Gid: uint32(o.gid), Groups: []uint32{}}
}

// chown gives path to the owner, when the children switch users.
func (o owner) chown(path string) error {
	if !o.switchTo {
		return nil
	}
	if err := os.Chown(path, o.uid, o.gid); err != nil {
		return fmt.Errorf("giving %s to user %s: %w", path, o.name, err)
	}
	return nil
}
