// Package schema holds the shop example's tables as a migration line.
package schema

import (
	"embed"

	"github.com/pgsaga/pgsaga/migrations"
)

//go:embed *.sql
var files embed.FS

// Line is the "shop" migration line; pass it in migrations.MigrateOpts.Lines.
func Line() migrations.Line { return migrations.Line{Name: "shop", FS: files} }
