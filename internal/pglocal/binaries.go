package pglocal

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
)

// binaries are the paths of the PostgreSQL server programs we run.
type binaries struct {
	initdb, postgres string
}

// errNoBinaries is the message for a machine without PostgreSQL server binaries.
const errNoBinaries = "no PostgreSQL server binaries found (looked in PATH and /usr/lib/postgresql/*/bin): " +
	"install postgresql (Debian: apt-get install postgresql) or set PGSAGA_TEST_DATABASE_URL / DATABASE_URL to a server"

// findBinaries finds initdb and postgres in binDir, or when binDir is empty in the directory of
// initdb in PATH, else in the highest-versioned /usr/lib/postgresql/*/bin.
func findBinaries(binDir string) (binaries, error) {
	if binDir != "" {
		b, err := binariesIn(binDir)
		if err != nil {
			return binaries{}, fmt.Errorf("error finding PostgreSQL in BinDir: %w", err)
		}
		return b, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if b, err := binariesIn(filepath.Dir(p)); err == nil {
			return b, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, dir := range dirs {
		if b, err := binariesIn(dir); err == nil {
			return b, nil
		}
	}
	return binaries{}, errors.New(errNoBinaries)
}

// binariesIn returns the binaries in dir, or an error if either is missing.
func binariesIn(dir string) (binaries, error) {
	b := binaries{initdb: filepath.Join(dir, "initdb"), postgres: filepath.Join(dir, "postgres")}
	for _, p := range []string{b.initdb, b.postgres} {
		info, err := os.Stat(p)
		if err != nil {
			return binaries{}, err
		}
		if info.IsDir() || info.Mode()&0o111 == 0 {
			return binaries{}, fmt.Errorf("%s is not an executable file", p)
		}
	}
	return b, nil
}

// versionOf returns the major version in /usr/lib/postgresql/<version>/bin, or -1.
func versionOf(binDir string) float64 {
	v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	if err != nil {
		return -1
	}
	return v
}
