// Package libdeps holds the test that keeps the library light: what importing pgsaga's engine
// brings into an application's build and module graph.
package libdeps
