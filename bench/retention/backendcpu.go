package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// gcPool is a pool of one connection for GC, so that one server backend runs every batch and
// its CPU time is GC's: a figure the machine's other load moves far less than wall time.
func gcPool(ctx context.Context, pool *pgxpool.Pool) (*pgxpool.Pool, error) {
	cfg := pool.Config().Copy()
	cfg.MinConns, cfg.MaxConns = 1, 1
	return pgxpool.NewWithConfig(ctx, cfg)
}

// backendCPU is the CPU time (user and system) the pool's one backend has used so far, read
// from /proc: the server must run on this machine. It returns 0 when it cannot be read.
func backendCPU(ctx context.Context, pool *pgxpool.Pool) time.Duration {
	var pid int
	if err := pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		return 0
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's parenthesis: state is field 3, utime 14, stime 15.
	_, rest, ok := strings.Cut(string(stat), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	user, _ := strconv.ParseInt(f[11], 10, 64)
	system, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(user+system) * (time.Second / 100) // USER_HZ is 100 on Linux
}
