package perflab

import (
	"context"
	"flag"
	"fmt"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestLabServerProfile samples the backends of each variant's database with `perf record -e
// cpu-clock` (software clock: this machine has no hardware counters) while the variant runs at
// c=8, and prints where PostgreSQL spends its time, by function.
func TestLabServerProfile(t *testing.T) {
	requireLab(t)
	if _, err := osexec.LookPath("perf"); err != nil {
		t.Fatal("perf is needed (Debian's linux-perf)")
	}
	floor2rt, hand1tx := floorVariants()
	vs := []variant{
		engineVariant("pgsaga-phased", "sbs_phased", false, ""),
		engineVariant("pgsaga-1tx", "sbs_single", false, ""),
		floor2rt,
		hand1tx,
	}
	for _, v := range vs {
		if *onlyFlag == "" || strings.Contains(v.name, *onlyFlag) {
			profile(t, v, 6*time.Second)
		}
	}
}

func profile(t *testing.T, v variant, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	p := newDatabase(t, 10, nil)
	if err := v.setup(ctx, p); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	run := func(d time.Duration) {
		stop := time.Now().Add(d)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for time.Now().Before(stop) {
					if err := v.op(ctx, p, int(n.Add(1))); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	run(time.Second) // warm-up: every connection open, statements prepared
	pids := backendPIDs(t, p)
	out := t.TempDir() + "/perf.data"
	if *perfDirFlag != "" {
		out = *perfDirFlag + "/" + strings.ReplaceAll(v.name, " ", "_") + ".data"
	}
	cmd := osexec.Command("perf", "record", "-e", "cpu-clock", "-F", "1000", "--call-graph", "dwarf,16384", "-o", out, "-p", strings.Join(pids, ","))
	cmd.Stderr, cmd.Stdout = nil, nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n0 := n.Load()
	run(d)
	reqs := n.Load() - n0
	_ = cmd.Process.Signal(syscall.SIGINT)
	_ = cmd.Wait()
	// Inclusive shares (children counted) of the functions that say where the time goes.
	report, err := osexec.Command("perf", "report", "-i", out, "--stdio", "--children", "--sort", "sym",
		"-g", "none", "--percent-limit", "0.5").Output()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(os.Stdout, "\n#### %s: %d requests in %s\n\n", v.name, reqs, d)
	fmt.Fprintln(os.Stdout, "| function (inclusive) | share of backend CPU |")
	fmt.Fprintln(os.Stdout, "| --- | ---: |")
	for _, line := range strings.Split(string(report), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || strings.HasPrefix(line, "#") {
			continue
		}
		if name := f[len(f)-1]; interesting[name] != "" {
			fmt.Fprintf(os.Stdout, "| %s (%s) | %s |\n", name, interesting[name], f[0])
		}
	}
	if *flatFlag {
		flat, err := osexec.Command("perf", "report", "-i", out, "--stdio", "--no-children", "--sort", "sym",
			"-g", "caller,0.5,callee,function,percent", "--percent-limit", "1.5").Output()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(os.Stdout, "\n```\n%s\n```\n", flat)
	}
}

func backendPIDs(t *testing.T, p *pgxpool.Pool) []string {
	t.Helper()
	var pids []int32
	err := server.admin.QueryRow(context.Background(),
		`SELECT array_agg(pid) FROM pg_stat_activity WHERE datname = $1`, p.Config().ConnConfig.Database).Scan(&pids)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, pid := range pids {
		out = append(out, strconv.Itoa(int(pid)))
	}
	return out
}

var onlyFlag = flag.String("lab.only", "", "with -lab: TestLabServerProfile profiles only the variants whose name contains this")

var perfDirFlag = flag.String("lab.perfdir", "", "with -lab: TestLabServerProfile keeps each variant's perf.data in this directory")

var flatFlag = flag.Bool("lab.flat", false, "with -lab: TestLabServerProfile also prints the leaf functions with their callers")

// interesting are the backend functions reported, with what they stand for.
var interesting = map[string]string{
	"PostgresMain":              "everything a backend does",
	"exec_bind_message":         "Bind: parameters, plan choice",
	"exec_execute_message":      "Execute",
	"GetCachedPlan":             "cached plan lookup / custom planning",
	"pg_plan_queries":           "planning",
	"standard_ExecutorStart":    "executor start-up",
	"ExecInitNode":              "plan tree initialisation",
	"ExecConstraints":           "CHECK and NOT NULL constraints",
	"ExecRelCheck":              "CHECK constraints",
	"stringToNode":              "reading stored expression trees (pg_strtok)",
	"ExecPrepareExpr":           "preparing an expression per execution",
	"expression_planner":        "planning an expression per execution",
	"ExecInsert":                "INSERT of one row",
	"ExecOnConflictUpdate":      "ON CONFLICT DO UPDATE",
	"ExecCheckIndexConstraints": "ON CONFLICT pre-check",
	"ExecutorEnd":               "executor shutdown",
	"exec_parse_message":        "Parse",
	"ExecEvalExprSwitchContext": "expression evaluation",
	"ExecUpdate":                "UPDATE of one row",
	"ExecInsertIndexTuples":     "index entries",
	"btinsert":                  "btree inserts",
	"heap_insert":               "heap insert",
	"heap_update":               "heap update",
	"AfterTriggerEndQuery":      "AFTER triggers",
	"plpgsql_exec_function":     "plpgsql",
	"Async_Notify":              "NOTIFY queued",
	"PreCommit_Notify":          "NOTIFY at commit",
	"CommitTransactionCommand":  "commit",
	"XLogInsert":                "WAL records",
	"XLogFlush":                 "WAL flush at commit",
	"issue_xlog_fsync":          "fsync",
	"index_getnext_tid":         "index lookups",
	"ExecScan":                  "scans",
	"printtup":                  "sending rows",
	"pq_getbyte":                "reading the socket",
	"secure_read":               "socket reads",
	"secure_write":              "socket writes",
	"ProcessUtility":            "utility statements (BEGIN, COMMIT)",
	"jsonb_in":                  "jsonb input (text)",
	"jsonb_recv":                "jsonb input (binary)",
	"finish_task_switch.isra.0": "kernel: context switches",
}
