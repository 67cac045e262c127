package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressDelay is how long an operation runs before its progress bar appears: a command that
// finishes sooner prints nothing but its result.
const progressDelay = time.Second

// progress is the progress bar of a long operation (gc, bulk resume) on stderr. It is shown
// only when stderr is a terminal, never with --json, and only once the operation has run for
// progressDelay; otherwise its methods do nothing. Its methods are safe for concurrent use.
type progress struct {
	mu    sync.Mutex
	out   io.Writer // where the bar is drawn; nil when no bar may be shown
	desc  string
	unit  string
	total int64 // -1 when unknown: a spinner with a count
	done  int64
	timer *time.Timer
	bar   *progressbar.ProgressBar
}

// newProgress starts the progress of an operation over total items (-1 when unknown), shown
// on c's stderr when the command line allows it (see progress).
func (c *cli) newProgress(desc, unit string, total int, asJSON bool) *progress {
	var out io.Writer
	if !asJSON && isTerminal(c.env.Stderr) {
		out = c.env.Stderr
	}
	return startProgress(out, desc, unit, int64(total), progressDelay)
}

// startProgress draws on out (nothing when out is nil) once delay has passed.
func startProgress(out io.Writer, desc, unit string, total int64, delay time.Duration) *progress {
	p := &progress{out: out, desc: desc, unit: unit, total: total}
	if out != nil {
		p.timer = time.AfterFunc(delay, p.show)
	}
	return p
}

// isTerminal reports whether w is a terminal (not a pipe, a file or a buffer).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (p *progress) show() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.out == nil || p.bar != nil {
		return
	}
	p.bar = progressbar.NewOptions64(p.total,
		progressbar.OptionSetWriter(p.out),
		progressbar.OptionSetDescription(p.desc),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString(p.unit),
		progressbar.OptionThrottle(65*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetRenderBlankState(true),
	)
	_ = p.bar.Set64(p.done)
}

// add counts n more items done.
func (p *progress) add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += int64(n)
	if p.bar != nil {
		_ = p.bar.Add(n)
	}
}

// set records that done items are done in all.
func (p *progress) set(done int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = int64(done)
	if p.bar != nil {
		_ = p.bar.Set64(p.done)
	}
}

// println writes one line of the command's output to w, keeping the bar below it.
func (p *progress) println(w io.Writer, line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil && p.total >= 0 { // a spinner redraws itself from its own goroutine
		_ = p.bar.Clear()
	}
	fmt.Fprintln(w, line)
}

// finish removes the bar, if it was shown; the operation's result follows on a clean line.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timer != nil {
		p.timer.Stop()
	}
	if p.bar != nil {
		_ = p.bar.Finish()
	}
	p.out = nil
}
