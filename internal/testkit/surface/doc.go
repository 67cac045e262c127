// Package surface holds the test that keeps the library's exported surface no larger than the
// job: it counts the names a user of the library packages can reach and fails above a budget.
package surface
