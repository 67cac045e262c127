// Package perflab holds the measurements behind FINDINGS.md: Go benchmarks of the
// engine's request paths, through its public API, for CPU and allocation profiles, against a
// throwaway PostgreSQL with pg_stat_statements loaded.
//
// Nothing here is imported: it is test code.
//
//	go test ./bench/perflab -run '^$' -bench . -benchtime 3000x -cpuprofile cpu.out
//
// The schema experiments of phase 1 (FINDINGS.md §5) were lab code on copies of the key table;
// their findings are applied in the store, and the code that measured them is in the history
// (commit d6a153e and after), not here: only saga's store writes SQL on pgsaga_key.
//
// Server CPU is read from /proc (the cluster's processes only), so it does not count what other
// processes on a shared machine do; client CPU is this process's rusage.
package perflab
