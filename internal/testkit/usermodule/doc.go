// Package usermodule holds a test that builds the library's Examples in a module of a user's,
// outside the repository: what `go doc` and pkg.go.dev show must compile for someone who
// imports the library, with nothing from internal/.
package usermodule
