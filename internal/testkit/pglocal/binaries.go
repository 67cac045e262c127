package pglocal

import (
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

// debianBinDirs is where Debian and Ubuntu install each major version's server binaries.
const debianBinDirs = "/usr/lib/postgresql/*/bin"

// findBinaries finds initdb and postgres in binDir, or when binDir is empty in the directory of
// initdb in PATH, else in the highest-versioned directory matching libGlob.
func findBinaries(binDir, libGlob string) (binaries, error) {
	if binDir != "" {
		b, err := binariesIn(binDir)
		if err != nil {
			return binaries{}, fmt.Errorf("Config.BinDir: %w", err)
		}
		return b, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if b, err := binariesIn(filepath.Dir(p)); err == nil {
			return b, nil
		}
	}
	dirs, _ := filepath.Glob(libGlob)
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, dir := range dirs {
		if b, err := binariesIn(dir); err == nil {
			return b, nil
		}
	}
	return binaries{}, fmt.Errorf("no PostgreSQL server binaries found (looked for initdb and postgres in PATH and %s): "+
		"install postgresql (Debian/Ubuntu: apt-get install postgresql) or set DATABASE_URL to an existing server", libGlob)
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
