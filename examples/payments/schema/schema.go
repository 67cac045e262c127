// Package schema holds the example payments service's tables as a migration line.
package schema

import (
	"embed"

	"github.com/pgsaga/pgsaga/migrations"
)

//go:embed *.sql
var files embed.FS

// Line is the "payments" migration line; pass it in migrations.MigrateOpts.Lines.
func Line() migrations.Line { return migrations.Line{Name: "payments", FS: files} }
