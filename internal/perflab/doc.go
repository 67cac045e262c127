// Package perflab holds the measurements behind PERF.md (issue 11): Go benchmarks of the
// engine's request paths for CPU and allocation profiles, and experiments on the key table's
// schema and statements, run against a throwaway PostgreSQL with pg_stat_statements loaded.
//
// Nothing here is imported: it is test code. The benchmarks run with `go test -bench`; the
// experiments, which take minutes and print tables, only with the -lab flag:
//
//	go test ./internal/perflab -run '^$' -bench . -benchtime 3000x -cpuprofile cpu.out
//	go test ./internal/perflab -run 'TestLab/schema' -lab -v
//
// Server CPU is read from /proc (the cluster's processes only), so it does not count what other
// processes on a shared machine do; client CPU is this process's rusage.
package perflab
