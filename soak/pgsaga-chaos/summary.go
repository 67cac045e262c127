package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pgsaga/pgsaga/gateway"
)

// summary is a run's figures and verdict.
type summary struct {
	cfg      *Config
	dir      string
	ran      time.Duration
	drain    *drainResult
	payments int
	invoices int
	doubles  int // payments double-clicked
	// sharedKeys counts the intents under a key string another scope's intent used too.
	sharedKeys int
	requests   int
	byStatus   map[string]int
	faults     *faultCounts
	starts     map[string]int // process starts, by process
	// failovers are a Patroni pair's failovers; outage, for each, the longest time no client got
	// a new 201 across it, until the new primary took writes (-1: no 201 after it in the run).
	failovers []failover
	outage    []time.Duration
	// inLossWindow counts, for each failover, the 201s answered in its loss window (lossy only).
	inLossWindow []int

	charges        int
	chargesBy      map[gateway.Status]int
	pendingSeen    int
	completion     []time.Duration // payments answered during the run, first send to answer
	drainAnswered  int             // payments first answered during the drain
	verdict        *verdict
	violationKinds map[string]int
	// reconciled is set when reconciliation ran; unmatched is how many charges it reported.
	reconciled         bool
	checked, unmatched int
}

func (s *summary) pass() bool { return s.verdict.pass() }

func (r *runner) summarize(ev *evidence, v *verdict, dr *drainResult, begin time.Time, ran time.Duration) *summary {
	s := &summary{cfg: r.cfg, dir: r.dir, ran: ran, drain: dr, faults: r.faults, starts: map[string]int{}, failovers: r.failovers.all(),
		chargesBy: map[gateway.Status]int{}, pendingSeen: r.ledger.pendingSeen(), verdict: v,
		violationKinds: map[string]int{}}
	if ev.Reconcile != nil {
		s.reconciled, s.checked, s.unmatched = true, ev.Reconcile.Checked, len(ev.Reconcile.Unmatched)
	}
	s.requests, s.byStatus = r.traffic.tr.figures()
	for _, fo := range s.failovers {
		d, ok := r.traffic.tr.longestGap(fo.at, fo.at.Add(fo.primaryAfter), begin.Add(ran))
		if !ok {
			d = -1
		}
		s.outage = append(s.outage, d)
		n := 0
		if !fo.lossFrom.IsZero() {
			n = r.traffic.tr.createdBetween(fo.lossFrom, fo.at)
		}
		s.inLossWindow = append(s.inLossWindow, n)
	}
	for _, d := range append(r.env.daemons(), r.env.sim) {
		d.mu.Lock()
		s.starts[d.name] = d.starts
		d.mu.Unlock()
	}
	byString := map[string]int{}
	for _, it := range ev.Intents {
		byString[it.Key]++
	}
	for _, it := range ev.Intents {
		if byString[it.Key] > 1 {
			s.sharedKeys++
		}
	}
	for _, it := range r.traffic.intents.all() {
		sent, answers, _ := it.snapshot()
		if sent.IsZero() {
			continue
		}
		if it.kind == "invoice" {
			s.invoices++
			continue
		}
		s.payments++
		if it.double {
			s.doubles++
		}
		switch {
		case len(answers) == 0:
		case answers[0].drain:
			s.drainAnswered++
		default:
			s.completion = append(s.completion, answers[0].at.Sub(sent))
		}
	}
	slices.Sort(s.completion)
	s.charges = len(ev.Charges)
	for _, c := range ev.Charges {
		s.chargesBy[c.Status]++
	}
	for _, vi := range v.violations {
		s.violationKinds[vi.kind]++
	}
	return s
}

// percentile returns the p-th percentile (0..100) of sorted ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(float64(len(ds)-1) * p / 100)
	return ds[i]
}

// String is the summary as printed at the end of a run.
func (s *summary) String() string {
	var b strings.Builder
	row := func(name, format string, args ...any) {
		fmt.Fprintf(&b, "  %-22s %s\n", name, fmt.Sprintf(format, args...))
	}
	verdict := "PASS"
	v := s.verdict
	if !s.pass() {
		verdict = fmt.Sprintf("FAIL (%d violations)", len(v.violations))
	}
	c, sf := s.cfg, s.cfg.Sim
	fmt.Fprintf(&b, "pgsaga chaos run: %s\n", verdict)
	row("seed", "%d", c.Seed)
	row("duration", "%s of traffic and faults, then %s of drain (workers alone %s)", s.ran.Round(time.Second), s.drain.took.Round(time.Second), s.drain.workersTook.Round(time.Second))
	row("setup", "2 serve + 2 worker (lease %s, sweep %s), %d clients, double-click %.2f", c.Lease, c.SweepInterval, c.Clients, max(c.DoubleClick, 0))
	row("gateway-sim", "idempotency %s, inquiry on; pending %.2f for %s, latency %s +0..%s, latency-before %s, lose-response %.2f, fail-before %.2f",
		sf.Idempotency, max(sf.Pending, 0), sf.PendingFor, orNone(sf.Latency), orNone(sf.LatencyJitter), orNone(sf.LatencyBefore), max(sf.LoseResponse, 0), max(sf.FailBefore, 0))
	row("intents", "%d payments (%d double-clicked), %d invoices, %d tenants; %d under a key string another scope used",
		s.payments, s.doubles, s.invoices, len(tenants), s.sharedKeys)
	row("requests", "%d (%d retries)", s.requests, s.requests-s.payments-s.doubles-s.invoices)
	labels := make([]string, 0, len(s.byStatus))
	for l := range s.byStatus {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for i, l := range labels {
		name := ""
		if i == 0 {
			name = "answers by status"
		}
		row(name, "%-40s %d", l, s.byStatus[l])
	}
	row("409s / 503s seen", "%d / %d", sumPrefix(s.byStatus, "409"), sumPrefix(s.byStatus, "503"))
	f := s.faults
	row("kill -9", "%d serve, %d worker", f.KillServe.Load(), f.KillWorker.Load())
	row("zombies (SIGSTOP)", "%d serve, %d worker, %s each", f.FreezeServe.Load(), f.FreezeWorker.Load(), c.PauseFor)
	if c.patroni() {
		row("database", "Patroni pair, %s replication, leader lock TTL %s, one multi-host URL", strings.TrimPrefix(c.Cluster, "patroni-"), patroniTTL)
		row("primary pauses", "%d of %s (lease %s)", f.PausePG.Load(), c.PauseFor, c.Lease)
		s.failoverRows(row)
	} else {
		row("database", "one PostgreSQL server")
		row("database pauses", "%d of %s (lease %s)", f.PausePG.Load(), c.PauseFor, c.Lease)
		row("database restarts", "%d (down %s each)", f.RestartPG.Load(), c.DBDown)
	}
	row("gateway inquiry off", "%d times, %s each", f.InquiryOff.Load(), orNone(c.InquiryOff))
	row("faults skipped", "%d (target busy with an earlier fault)", f.Skipped.Load())
	names := make([]string, 0, len(s.starts))
	for n := range s.starts {
		names = append(names, n)
	}
	sort.Strings(names)
	starts := make([]string, len(names))
	for i, n := range names {
		starts[i] = fmt.Sprintf("%s %d", n, s.starts[n])
	}
	row("process starts", "%s", strings.Join(starts, ", "))
	row("charges", "%d (%d succeeded, %d declined, %d still pending); %d were pending for a while",
		s.charges, s.chargesBy[gateway.StatusSucceeded], s.chargesBy[gateway.StatusDeclined], s.chargesBy[gateway.StatusPending], s.pendingSeen)
	d := s.drain
	row("drain", "%d keys started at the end; %d left after the workers alone; %d intents retried by their clients", d.startedAtEnd, d.leftByWorkers, d.retried)
	row("parked keys", "%s", formatCounts(d.parked))
	row("operator", "%d settled succeeded, %d settled failed, %d resumed", d.settledSucceeded, d.settledFailed, d.resumed)
	row("claim", "%s", c.claim())
	row("double charges", "%d", v.doubleCharges)
	row("lost intents", "%d", v.lost)
	if c.claim() == claimMoney {
		row("forgotten keys", "%d (answered, then lost by a failover)", v.forgotten)
		row("answers changed", "%d intents (not in the money they name, after a lost commit)", v.changedBytes)
	}
	row("own replays", "%d first requests answered as a replay of their own key (a commit whose answer was lost)", v.ownReplays)
	row("unaccounted charges", "%d (no completed key accounts for them); %d not reported by reconciliation", v.unaccounted, v.unreported)
	if s.reconciled {
		row("reconciliation", "%d charges listed by the provider since the run began, %d reported without a key", s.checked, s.unmatched)
	} else {
		row("reconciliation", "not run")
	}
	row("payment completion", "p50 %s, p99 %s, max %s (%d answered during the run, %d in the drain)",
		percentile(s.completion, 50).Round(time.Millisecond), percentile(s.completion, 99).Round(time.Millisecond),
		percentile(s.completion, 100).Round(time.Millisecond), len(s.completion), s.drainAnswered)
	for i, line := range d.decisions {
		if i == 10 {
			row("", "… %d more operator actions in the timeline", len(d.decisions)-10)
			break
		}
		row("operator action", "%s", line)
	}
	if len(v.violations) > 0 {
		row("violations", "%s", formatCounts(s.violationKinds))
		for i, vi := range v.violations {
			if i == 20 {
				fmt.Fprintf(&b, "    … %d more in violations.txt\n", len(v.violations)-20)
				break
			}
			fmt.Fprintf(&b, "    %s: %s\n", vi.kind, firstLine(vi.text))
		}
	}
	if s.dir != "" {
		row("logs", "%s", s.dir)
	}
	return b.String()
}

func sumPrefix(m map[string]int, prefix string) int {
	n := 0
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

func formatCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// failoverRows adds the failovers' rows: how many of each kind, how long until a new primary
// took writes and until the pair was healthy again.
func (s *summary) failoverRows(row func(name, format string, args ...any)) {
	byKind := map[string]int{}
	var toPrimary, toHealthy, outages []time.Duration
	failed, inPlace := 0, 0
	for i, fo := range s.failovers {
		if s.outage[i] >= 0 && fo.err == nil {
			outages = append(outages, s.outage[i])
		}
		byKind[fo.kind.String()]++
		switch {
		case fo.err != nil:
			failed++
		case fo.inPlace:
			inPlace++
		default:
			toPrimary = append(toPrimary, fo.primaryAfter)
			toHealthy = append(toHealthy, fo.healthyAfter)
		}
	}
	slices.Sort(toPrimary)
	slices.Sort(toHealthy)
	slices.Sort(outages)
	row("failovers", "%d (%s); %d failed, %d restarted in place (every %s on average, from healthy to the next)",
		len(s.failovers), formatCounts(byKind), failed, inPlace, s.cfg.FailoverEvery)
	row("failover took", "new primary after p50 %s, max %s; healthy again after p50 %s, max %s",
		percentile(toPrimary, 50).Round(time.Millisecond), percentile(toPrimary, 100).Round(time.Millisecond),
		percentile(toHealthy, 50).Round(time.Millisecond), percentile(toHealthy, 100).Round(time.Millisecond))
	row("clients' outage", "no new 201 for p50 %s, max %s across a failover (longest gap between two)",
		percentile(outages, 50).Round(time.Millisecond), percentile(outages, 100).Round(time.Millisecond))
	for i, fo := range s.failovers {
		switch {
		case fo.err != nil:
			row("failover", "%s of %s: %v", fo.kind, fo.from, fo.err)
		default:
			lost := ""
			if !fo.lossFrom.IsZero() {
				lost = fmt.Sprintf(" (%d 201s answered in its %s loss window)", s.inLossWindow[i], fo.at.Sub(fo.lossFrom).Round(time.Millisecond))
			}
			outage := "-"
			if s.outage[i] >= 0 {
				outage = s.outage[i].Round(time.Millisecond).String()
			}
			row("failover", "%s of %s at %s%s: %s primary after %s, no new 201 for %s, healthy after %s", fo.kind, fo.from,
				fo.at.Format("15:04:05"), lost, fo.to, fo.primaryAfter.Round(time.Millisecond), outage, fo.healthyAfter.Round(time.Millisecond))
		}
	}
}
