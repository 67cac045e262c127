package pgcluster

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/pgsaga/pgsaga/internal/testkit/pglocal"
)

// patroniPrograms are the PostgreSQL programs Patroni runs from its bin_dir.
var patroniPrograms = []string{"postgres", "initdb", "pg_ctl", "pg_controldata", "pg_rewind", "pg_basebackup", "pg_isready"}

// findBinDir returns a directory holding every program Patroni runs: binDir (or where pglocal
// finds the server binaries), or, when that is a directory of links to some of them (Debian's
// /usr/local/bin may link initdb and postgres alone), the directory the postgres link points into.
func findBinDir(binDir string) (string, error) {
	dir, err := pglocal.FindBinDir(binDir)
	if err != nil {
		return "", err
	}
	missing := missingPrograms(dir)
	if len(missing) == 0 {
		return dir, nil
	}
	if real, err := filepath.EvalSymlinks(filepath.Join(dir, "postgres")); err == nil {
		if realDir := filepath.Dir(real); len(missingPrograms(realDir)) == 0 {
			return realDir, nil
		}
	}
	return "", fmt.Errorf("no %v beside postgres in %s, which Patroni needs: set Config.BinDir", missing, dir)
}

func missingPrograms(dir string) []string {
	var missing []string
	for _, p := range patroniPrograms {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			missing = append(missing, p)
		}
	}
	return missing
}
