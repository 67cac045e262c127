package pgcluster

import (
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"github.com/pgsaga/pgsaga/internal/testkit/childproc"
)

// guardScript is the guardian: it reads process group ids from its stdin, one a line, until the
// line "stop" (a clean Stop: it exits doing nothing) or the end of the pipe, which comes when the
// process that started it dies, however it dies. Then it kills those groups (etcd's, each
// Patroni's with whatever Patroni was running) and every PostgreSQL server of the cluster
// directory $1, and removes the directory. Patroni starts a postmaster in a session of its own,
// and each child of a postmaster leads a process group of its own, so neither our parent-death
// signal nor a group signal reaches them: the guardian finds each postmaster in its
// postmaster.pid, stops it (it forks no more), lists its children, resumes them all and asks
// for an immediate shutdown (SIGQUIT, which frees the server's shared memory; a frozen process
// would not act on it), then SIGKILLs what is left a second later. Twice, a second apart, to catch
// a server Patroni was starting as it died.
const guardScript = `
dir=$1
groups=
while IFS= read -r line; do
	case $line in
	stop) exit 0 ;;
	*) groups="$groups $line" ;;
	esac
done
for round in 1 2; do
	for g in $groups; do kill -KILL -- "-$g" 2>/dev/null; done
	all=
	for f in "$dir"/*/data/postmaster.pid; do
		[ -f "$f" ] || continue
		read -r pm < "$f" || continue
		grep -qaF -- "$dir" "/proc/$pm/cmdline" 2>/dev/null || continue
		kill -STOP "$pm" 2>/dev/null
		kids=$(cat "/proc/$pm/task/$pm/children" 2>/dev/null)
		for p in $kids $pm; do kill -CONT "$p" 2>/dev/null; done
		kill -QUIT "$pm" 2>/dev/null
		all="$all $pm $kids"
	done
	sleep 1
	for p in $all; do kill -KILL "$p" 2>/dev/null; done
done
rm -rf -- "$dir"
`

// guardian is the running guard script.
type guardian struct {
	proc  *childproc.Process
	mu    sync.Mutex
	stdin io.WriteCloser
}

// startGuardian starts the guardian of dir. It runs as the calling user (root may signal the
// owner's processes) in a process group of its own, so a Ctrl-C at the terminal reaches us and
// not it, and without a parent-death signal: it must outlive us.
func startGuardian(dir string) (*guardian, error) {
	cmd := exec.Command("/bin/sh", "-c", guardScript, "pgcluster-guard", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	p, err := childproc.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("starting the guardian: %w", err)
	}
	return &guardian{proc: p, stdin: stdin}, nil
}

// watch tells the guardian to kill process group pgid if we die.
func (g *guardian) watch(pgid int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, err := io.WriteString(g.stdin, strconv.Itoa(pgid)+"\n")
	return err
}

// release ends the guardian without it doing anything: we cleaned up ourselves.
func (g *guardian) release() {
	g.mu.Lock()
	_, _ = io.WriteString(g.stdin, "stop\n")
	_ = g.stdin.Close()
	g.mu.Unlock()
	<-g.proc.Exited()
}

// fire ends the guardian as our death would: it kills what is left and removes the directory.
// For a Start that failed half way.
func (g *guardian) fire() {
	g.mu.Lock()
	_ = g.stdin.Close()
	g.mu.Unlock()
	<-g.proc.Exited()
}
