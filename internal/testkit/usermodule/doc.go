// Package usermodule holds the tests that build what a user copies in a module of a user's,
// outside the repository, with nothing from internal/: the library's Examples (what `go doc`
// and pkg.go.dev show must compile for someone who imports the library), and the README's
// quickstart, whose test it runs against a throwaway PostgreSQL.
package usermodule
