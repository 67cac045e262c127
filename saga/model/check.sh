#!/usr/bin/env bash
# Checks pgsaga's protocol model (pgsaga.pml, beside this file) with spin; README.md explains
# the configurations, the properties and the seeded bugs.
#
#   check.sh              --safety --liveness --witnesses --seeded, in one pool of searches
#   check.sh --safety     exhaustive safety search of each configuration (assertions, end states)
#   check.sh --liveness   "every intent ends" as an LTL property, crashes unbounded in the steps
#   check.sh --witnesses  each interesting event must be reachable (the checks are not vacuous)
#   check.sh --seeded     each seeded protocol bug must make spin report a violation
#   check.sh --variants   protocol variants and findings worth re-checking (not in the default)
#
# Exits non-zero on any violation in the protocol, on an incomplete search (depth or memory
# bound hit, or a search spin did not finish), when a seeded bug is not found, or when a
# witness is not reached. Searches are exhaustive: -DCOLLAPSE compresses states losslessly and
# hash collisions are resolved by comparing full states (no -DBITSTATE, no hash compaction), so
# there is no collision risk to report. Needs spin and gcc; installs nothing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
model="$here/pgsaga.pml"

for tool in spin gcc; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "check.sh: $tool is not installed (apt-get install -y spin gcc)" >&2
		exit 2
	fi
done

work="$(mktemp -d "${TMPDIR:-/tmp}/pgsaga-model.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Memory bound for one search, MB: hitting it fails the check (the search was not completed).
memlim="${MODEL_MEMLIM:-4096}"
depth=100000
failed=0

# Configurations (README.md, "Bounds"). Each is a set of -D flags on top of the defaults.
S1_DUPLICATE="-DOPRESUMES=0 -DTRIES_B=2 -DNO_INPROC -DMAXCRASH=1"
S2_OPERATOR="-DNO_B -DOP_ANYTIME -DNO_INPROC -DMAXCRASH=1 -DHBMAX=0"
S3_MARGIN="-DOPRESUMES=0 -DNO_B -DNO_INPROC -DL=4 -DINFLIGHT=2 -DM=1"
S4_RENEWAL="-DOPRESUMES=0 -DTRIES_B=2 -DNO_INPROC -DMAXCRASH=1 -DRENEW_ON_RESUME"
S5_IN_PROCESS="-DOPRESUMES=0 -DHBMAX=0 -DL=3 -DMAXCRASH=1"
S7_LOST_COMMITS="-DLOST_COMMITS -DOPRESUMES=0 -DNO_OP -DTRIES_B=0 -DNO_INPROC -DMAXCRASH=1 -DHBMAX=0"
S8_WINDOW="-DWINDOW_SHRINK -DOPRESUMES=0 -DNO_B -DL=4 -DM=1 -DINFLIGHT=1 -DWSMALL=0"
S8_OVER_MARGIN="-DWINDOW_SHRINK -DOPRESUMES=0 -DNO_B -DNO_INPROC -DL=4 -DM=1 -DINFLIGHT=2 -DWSMALL=0"
S9_RETENTION="-DGC -DOPRESUMES=0 -DTRIES_B=1 -DNO_INPROC -DMAXCRASH=1 -DHBMAX=0"
SEED="-DOPRESUMES=0 -DNO_B -DNO_INPROC"
SEED_WINDOW="-DWINDOW_SHRINK -DOPRESUMES=0 -DNO_B -DNO_INPROC -DL=3 -DM=1 -DINFLIGHT=1 -DWSMALL=0"
SEED_RENEWAL="$SEED -DRENEW_ON_RESUME"
SEED_IN_PROCESS="-DOPRESUMES=0 -DNO_B -DHBMAX=0 -DL=3 -DMAXCRASH=1"
SEED_RETENTION="$S9_RETENTION -DNO_OTHER"
SEED_RETENTION_OTHER="$S9_RETENTION -DNO_B"
L1_POISON_DUPLICATE="-DCRASH_ANY -DNO_INPROC -DOPRESUMES=0"
L2_POISON_FAIR="-DCRASH_ANY -DNO_INPROC -DNO_B -DOPRESUMES=0"

# build NAME "DEFINES" "CFLAGS": generates and compiles a verifier in $work/NAME.
build() {
	local name="$1" defines="$2" cflags="$3" dir="$work/$1"
	mkdir -p "$dir"
	# shellcheck disable=SC2086
	(cd "$dir" && spin $defines -a "$model" >spin.out 2>&1) || {
		echo "FAIL  $name: spin could not generate the verifier:"; cat "$dir/spin.out"; exit 1
	}
	# shellcheck disable=SC2086
	(cd "$dir" && gcc $cflags -DMEMLIM="$memlim" -o pan pan.c >gcc.out 2>&1) || {
		echo "FAIL  $name: the verifier did not compile:"; cat "$dir/gcc.out"; exit 1
	}
}

# property OUTPUT: names the property the first error of a spin report violates.
property() {
	local err
	err="$(grep -m1 -E '^pan:[0-9]+: ' <<<"$1" || true)"
	case "$err" in
	*"acceptance cycle"*) echo "every intent ends completed or parked (LTL <>[] status != started: a run that never ends)" ;;
	*"invalid end state"*) echo "no process stuck (invalid end state)" ;;
	*"(ncharges==0)"*) echo "never a second charge (the provider holds at most one charge for the intent, under any reference)" ;;
	*"(ncharges<=1)"*) echo "every charge belongs to an intent completed here or reported by reconciliation" ;;
	*"answered"*) echo "a client without its answer retries until the key exists again" ;;
	*"(w2==0)"*) echo "W2 commits at most once" ;;
	*"(u1==0)"*) echo "U1 (the compensation) commits at most once" ;;
	*"(w1==0)"*) echo "W1 commits at most once" ;;
	*"(settled==0)"*) echo "a settle commits at most once" ;;
	*"(othersclaim==0)"*) echo "no other request claims a key while its tombstone lives" ;;
	*"(other410==0)"*) echo "a 410 answers only the request whose key expired" ;;
	*"incall"*) echo "no call running twice at once (two sending windows overlap)" ;;
	*"(tok==e)&&(lease>0)"*) echo "a call is sent only under a live lease its execution holds" ;;
	*"execs<="*) echo "attempt budget (more than MaxAttempts executions under one budget)" ;;
	*"(chg=="*) echo "the outcome stored is the provider's" ;;
	*"(status!=1)"*) echo "every intent ends completed or parked (end state with the key started)" ;;
	*"flon[2]"*) echo "MODEL BOUND: more requests in flight than the model has room for" ;;
	*"assertion violated 0"*) echo "witness reached" ;;
	*) echo "unrecognised: ${err:-no error line}" ;;
	esac
}

# figures OUTPUT: states, transitions, depth, memory and time of a search.
figures() {
	local out="$1" stored trans depthr mem secs
	stored="$(grep -m1 -E 'states, stored' <<<"$out" | awk '{print $1}')"
	trans="$(grep -m1 -E 'transitions \(' <<<"$out" | awk '{print $1}')"
	depthr="$(grep -m1 -oE 'depth reached [0-9]+' <<<"$out" | awk '{print $3}')"
	mem="$(grep -m1 -E 'total actual memory usage' <<<"$out" | awk '{print $1}')"
	secs="$(grep -m1 -E 'pan: elapsed time' <<<"$out" | awk '{print $4}')"
	echo "states=$stored transitions=$trans depth=$depthr memory=${mem}MB time=${secs}s"
}

# incomplete OUTPUT: why a search did not cover the whole state space, if it did not.
incomplete() {
	local out="$1"
	if grep -q "Search not completed" <<<"$out"; then echo "search not completed"; fi
	if grep -q "max search depth too small" <<<"$out"; then echo "depth bound $depth too small"; fi
	if grep -qiE "out of memory|MEMLIM" <<<"$out"; then echo "memory bound ${memlim}MB reached"; fi
}

# clean NAME "DEFINES" "CFLAGS" "PAN FLAGS": the search must finish and find nothing.
clean() {
	local name="$1" out why
	build "$name" "$2" "$3"
	# shellcheck disable=SC2086
	out="$(cd "$work/$name" && ./pan -m$depth -w24 $4 2>&1)" || true
	if grep -qE "errors: [1-9]" <<<"$out"; then
		# (pan stops at the violation and also says "search not completed": the violation is news)
		printf 'FAIL  %-30s %s; trail:\n' "$name" "$(property "$out")"
		# -k: pan wrote the trail here, not beside the model, where spin -t looks by default
		# shellcheck disable=SC2086
		(cd "$work/$name" && spin $2 -t -p -g -k pgsaga.pml.trail "$model" 2>&1 | tail -80) || true
		return
	fi
	why="$(incomplete "$out")"
	if grep -qE "errors: 0" <<<"$out" && [ -z "$why" ]; then
		printf 'ok    %-30s %s\n' "$name" "$(figures "$out")"
		return
	fi
	printf 'FAIL  %-30s incomplete: %s\n' "$name" "${why:-no result from pan}"
}

# found NAME "DEFINES" "CFLAGS" "PAN FLAGS": spin must report a violation of the protocol.
found() {
	local name="$1" out prop
	build "$name" "$2" "$3"
	# shellcheck disable=SC2086
	out="$(cd "$work/$name" && ./pan -m$depth -w24 $4 2>&1)" || true
	if grep -qE "errors: [1-9]" <<<"$out"; then
		prop="$(property "$out")"
		case "$prop" in
		"MODEL BOUND"*|unrecognised*)
			printf 'FAIL  %-30s spin hit %s\n' "$name" "$prop" ;;
		*)
			printf 'ok    %-30s %s, at depth %s\n' "$name" "$prop" \
				"$(grep -m1 -oE 'at depth [0-9]+' <<<"$out" | awk '{print $3}')" ;;
		esac
		return
	fi
	printf 'FAIL  %-30s spin found no violation (%s)\n' "$name" "$(figures "$out")"
}

# witnesses NAME "DEFINES" N...: the verifier must reach each witness event N.
witnesses() {
	local name="$1" defines="$2" w out
	shift 2
	build "$name" "$defines" "$QUICK_CFLAGS"
	for w in "$@"; do
		out="$(cd "$work/$name" && PGSAGA_WITNESS="$w" ./pan -m$depth -w24 2>&1)" || true
		if grep -q "assertion violated 0" <<<"$out"; then
			printf 'ok    %-30s %s, at depth %s\n' "$name" "${WITNESS_NAMES[$w]}" \
				"$(grep -m1 -oE 'at depth [0-9]+' <<<"$out" | awk '{print $3}')"
		else
			printf 'FAIL  %-30s %s never reached (%s)\n' "$name" "${WITNESS_NAMES[$w]}" "$(figures "$out")"
		fi
	done
}

WITNESS_NAMES=(- "a send after a quiet, empty inquiry" "an inquiry found the charge" "a zombie's write fenced"
	"a request landed after its sender gave up" "U1 run by a resume at compensate:P1"
	"parked outcome_unknown" "parked attempts_exhausted" "parked permanent" "settled by the operator"
	"the operator's resume completed" "a heartbeat renewed the lease"
	"a superseded execution's request landed" "an in-process round sent again after its own unknown"
	"a pending charge read back final and taken" "a resumed call's own renewal committed"
	"the first request lost its claim's answer and gave the lease back"
	"W1 committed again after a failover lost the key" "W2 committed again after a failover lost it"
	"after a failover lost the key, the re-execution's inquiry found the charge made before"
	"a charge whose key a failover lost, its client answered: found by reconciliation only"
	"an execution that started before a failover wrote after it (its token came back)"
	"a request sent under the longer window landed after the window dropped"
	"a send after an empty inquiry, the window dropped, an earlier attempt that recorded its outcome holds the longer one"
	"a send after an empty inquiry, the window dropped, an earlier attempt that recorded no outcome holds the longer one"
	"a request with the key of the charge made before landed: answered with that charge"
	"the client's retry after GC answered 410 from the tombstone"
	"a claim waited for the GC deleting the key, went in when it committed, and was answered from the tombstone"
	"another request under the deleted key answered 422 from the tombstone"
	"a zombie's write found its key deleted by GC: fenced"
	"a claim that did not wait went in after a GC that committed after its snapshot: the key in it refused it")

# gcc -Og takes 10-20 s of CPU to compile a verifier, -O0 2-3 s, and -O0's search runs about 1.7
# times as long: -Og pays only for the searches that take more than about 15 s at -O0.
SAFETY_CFLAGS="-Og -DSAFETY -DCOLLAPSE"
LIVE_CFLAGS="-Og -DCOLLAPSE -DNFAIR=3"
QUICK_CFLAGS="-O0 -DSAFETY -DCOLLAPSE"
QUICK_LIVE_CFLAGS="-O0 -DCOLLAPSE -DNFAIR=3"

# The checks of each group, one per line: a function and its arguments (eval'd). The largest come
# first so that the pool of MODEL_JOBS runs ends together.
safety_tasks() {
	echo "clean S7-lost-commits \"$S7_LOST_COMMITS\" \"$SAFETY_CFLAGS\" ''"
	echo "clean S5-in-process \"$S5_IN_PROCESS\" \"$SAFETY_CFLAGS\" ''"
	echo "clean S1-duplicate \"$S1_DUPLICATE\" \"$SAFETY_CFLAGS\" ''"
	echo "clean S4-renewal \"$S4_RENEWAL\" \"$SAFETY_CFLAGS\" ''"
	echo "clean S2-operator \"$S2_OPERATOR\" \"$QUICK_CFLAGS\" ''"
	echo "clean S8-window \"$S8_WINDOW\" \"$QUICK_CFLAGS\" ''"
	echo "clean S9-retention \"$S9_RETENTION\" \"$QUICK_CFLAGS\" ''"
	echo "clean S8-window-over-margin \"$S8_OVER_MARGIN\" \"$QUICK_CFLAGS\" ''"
	echo "clean S3-margin \"$S3_MARGIN\" \"$QUICK_CFLAGS\" ''"
}
liveness_tasks() {
	echo "clean L2-poison-weak-fairness \"-DLIVENESS $L2_POISON_FAIR\" \"$LIVE_CFLAGS\" '-a -f'"
}
seeded_tasks() {
	local b
	for b in BUG_NO_FENCE BUG_NOW_LEASE BUG_EMPTY_INQUIRY BUG_COMP_SPLIT BUG_POISON \
		BUG_STALE_INQUIRY BUG_PENDING_RESEND BUG_HB_NO_ROW BUG_RESUMER_LATE; do
		echo "found $b \"$SEED -D$b\" \"$QUICK_CFLAGS\" ''"
	done
	# the renewal is only written when the takeover journaled no row
	echo "found BUG_NO_RENEWAL \"$SEED_RENEWAL -DBUG_NO_RENEWAL\" \"$QUICK_CFLAGS\" ''"
	echo "found BUG_INPROC_NO_WAIT \"$SEED_IN_PROCESS -DBUG_INPROC_NO_WAIT\" \"$QUICK_CFLAGS\" ''"
	# a reference drawn by P1 is only new, and a first send only unsafe, after a failover lost
	# the key
	echo "found BUG_PHASE_ID \"$S7_LOST_COMMITS -DBUG_PHASE_ID\" \"$QUICK_CFLAGS\" ''"
	echo "found BUG_NO_FIRST_INQUIRY \"$S7_LOST_COMMITS -DBUG_NO_FIRST_INQUIRY\" \"$QUICK_CFLAGS\" ''"
	# the window can only shrink with WINDOW_SHRINK; a window journaled with the outcome is
	# covered by the margin while the window is no longer than it (S8), not beyond
	echo "found BUG_CURRENT_WINDOW \"$SEED_WINDOW -DBUG_CURRENT_WINDOW\" \"$QUICK_CFLAGS\" ''"
	echo "found BUG_WINDOW_WITH_OUTCOME \"$S8_OVER_MARGIN -DBUG_WINDOW_WITH_OUTCOME\" \"$QUICK_CFLAGS\" ''"
	# retention: found by the client's retry running the operation again (without the other
	# request, which would find them first), the probe's race by the other request too
	for b in BUG_GC_NO_TOMBSTONE BUG_PROBE_TOMBSTONE_ONLY BUG_GC_SPLIT; do
		echo "found $b \"$SEED_RETENTION -D$b\" \"$QUICK_CFLAGS\" ''"
	done
	echo "found BUG_PROBE_TOMBSTONE_ONLY-other \"$SEED_RETENTION_OTHER -DBUG_PROBE_TOMBSTONE_ONLY\" \"$QUICK_CFLAGS\" ''"
	echo "found BUG_TOMB_NO_DIGEST \"$S9_RETENTION -DBUG_TOMB_NO_DIGEST\" \"$QUICK_CFLAGS\" ''"
	# the poison key as a liveness violation too (-A: the budget assertion would stop it first).
	# T_REVERSE only changes the order of the search: in spin's default order the nested search
	# wanders through 0.8 M states (80 s) before it closes the cycle, in reverse it takes 5,000.
	# (without the first request's lost claim answer, which the poison cycle does not need: with
	# it, spin reaches the cycle after 490 s instead of 3)
	echo "found BUG_POISON-liveness \"-DLIVENESS $L2_POISON_FAIR -DBUG_POISON -DNO_LOST_CLAIM\" \"$QUICK_LIVE_CFLAGS -DT_REVERSE\" '-a -f -A'"
}
witness_tasks() {
	echo "witnesses W-operator \"$S2_OPERATOR\" 1 2 3 4 5 6 7 8 9 10 12 14"
	echo "witnesses W-duplicate \"$S1_DUPLICATE\" 1 2 3 5 11 12 14 16"
	echo "witnesses W-margin \"$S3_MARGIN\" 1 12"
	echo "witnesses W-renewal \"$S4_RENEWAL\" 1 3 11 12 15"
	echo "witnesses W-in-process \"$S5_IN_PROCESS\" 1 13"
	echo "witnesses W-lost-commits \"$S7_LOST_COMMITS\" 2 3 17 18 19 20 21"
	echo "witnesses W-window \"$S8_WINDOW\" 1 13 22 23 24"
	echo "witnesses W-window-over-margin \"$S8_OVER_MARGIN\" 22 24"
	echo "witnesses W-retention \"$S9_RETENTION\" 3 26 27 28 29 30"
}
variant_tasks() {
	# (the largest first: two failovers about 4 minutes, then the keys' and S7 with heartbeats
	# about 2, the rest a minute or less)
	# Lost commits with two failovers in a run, and with heartbeats.
	echo "clean S7-two-failovers \"$S7_LOST_COMMITS -DMAXLOSS=2\" \"$SAFETY_CFLAGS\" ''"
	# The timing the lost-commits configuration assumes (finding 10): with a provider that
	# honours idempotency keys, no second charge with a failover at any moment; without keys,
	# none with a failover at any moment at which no execution may still send and no request may
	# still land (the standby's leases, schedule and quiet times still running), and a second
	# charge, even with intent-derived references, with a failover at any moment.
	echo "clean S7-keys-failover-anytime \"$S7_LOST_COMMITS -DKEYS -DLOST_ANYTIME\" \"$SAFETY_CFLAGS\" ''"
	echo "clean S7-heartbeat \"${S7_LOST_COMMITS/-DHBMAX=0/}\" \"$SAFETY_CFLAGS\" ''"
	# Every actor at once, with smaller budgets.
	echo "clean S6-everyone \"-DMAXCRASH=1 -DOPBUDGET=1 -DHBMAX=0 -DOP_ANYTIME -DNO_INPROC\" \"$SAFETY_CFLAGS\" ''"
	echo "clean S7-failover-when-quiet \"$S7_LOST_COMMITS -DLOST_QUIET\" \"$SAFETY_CFLAGS\" ''"
	echo "found S7-failover-anytime \"$S7_LOST_COMMITS -DLOST_ANYTIME\" \"$QUICK_CFLAGS\" ''"
	echo "witnesses W-keys \"$S7_LOST_COMMITS -DKEYS -DLOST_ANYTIME\" 25"
	# Liveness with the duplicate too, without fairness (every run of the model is finite, so no
	# accepting run under -a proves the property for every schedule).
	echo "clean L1-poison-duplicate \"-DLIVENESS $L1_POISON_DUPLICATE\" \"$LIVE_CFLAGS\" '-a'"
	# The duplicate's configuration with two crashes, the operator's with heartbeats (larger).
	echo "clean S2-operator-heartbeat \"-DNO_B -DOP_ANYTIME -DNO_INPROC -DMAXCRASH=1\" \"$SAFETY_CFLAGS\" ''"
	echo "clean S1-duplicate-2-crashes \"-DOPRESUMES=0 -DTRIES_B=2 -DNO_INPROC -DMAXCRASH=2\" \"$SAFETY_CFLAGS\" ''"
	# With a fenced renewal before a resumed call (the takeover journaled no row), a resumer that
	# measures its lease from its own start is harmless: its renewal is fenced, or fresh.
	echo "clean BUG_RESUMER_LATE-renewed \"$S4_RENEWAL -DBUG_RESUMER_LATE\" \"$QUICK_CFLAGS\" ''"
	# A row quiet only from its deadline (the code also uses its ended_at): the same verdict.
	echo "clean S1-deadline-only \"$S1_DUPLICATE -DDEADLINE_ONLY\" \"$SAFETY_CFLAGS\" ''"
	# A takeover statement that parks by itself ends the poison key even when the process can
	# crash between a takeover and a separate park write.
	echo "clean L3-crash-before-park \"-DLIVENESS $L2_POISON_FAIR -DCRASH_PARK -DPARK_IN_TAKEOVER\" \"$QUICK_LIVE_CFLAGS\" '-a -f'"
	echo "found L3-crash-before-park-separate \"-DLIVENESS $L2_POISON_FAIR -DCRASH_PARK\" \"$QUICK_LIVE_CFLAGS\" '-a -f'"
	# Retention: the tombstone's window passed, a retry runs the operation again (the residual);
	# a tombstone committed before the delete, in a transaction of its own, is as safe as one
	# written with it; S9 with heartbeats and the retry's second takeover.
	echo "found S9-tombstone-expired \"$SEED_RETENTION -DTOMB_EXPIRES\" \"$QUICK_CFLAGS\" ''"
	echo "clean S9-tombstone-first \"$S9_RETENTION -DGC_TOMB_FIRST\" \"$QUICK_CFLAGS\" ''"
	echo "clean S9-retention-heartbeat \"${S9_RETENTION/-DHBMAX=0/}\" \"$QUICK_CFLAGS\" ''"
	echo "clean S9-retention-2-tries \"${S9_RETENTION/-DTRIES_B=1/-DTRIES_B=2}\" \"$QUICK_CFLAGS\" ''"
}

# run: runs the tasks on its input MODEL_JOBS at a time, then prints their results in the order
# of its input (with MODEL_TIMES=1, each task's wall time too). Every group asked for goes into
# one pool, so no core idles between groups.
run() {
	local jobs="${MODEL_JOBS:-2}" i=0 task
	mkdir -p "$work/results"
	while IFS= read -r task; do
		i=$((i + 1))
		while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
		(
			out="$work/results/$(printf '%03d' "$i")" t0=$SECONDS
			eval "$task" >"$out" 2>&1 </dev/null
			if [ -n "${MODEL_TIMES:-}" ] && [ "${task%% *}" != echo ]; then
				echo "      ($(awk '{print $2}' <<<"$task"): $((SECONDS - t0))s)" >>"$out"
			fi
		) &
	done
	wait
	cat "$work/results/"* 2>/dev/null
	if grep -q '^FAIL' "$work/results/"* 2>/dev/null; then failed=1; fi
	rm -rf "$work/results"
}

# tasks GROUP...: the tasks of each group, each group after a line that names it. The default
# order puts the long searches first and the many short seeded searches last, to fill the pool.
tasks() {
	local arg
	for arg in "$@"; do
		case "$arg" in
		--safety) echo "echo '== safety: exhaustive search, every assertion and end state'"; safety_tasks ;;
		--liveness) echo "echo \"== liveness: <>[] (status != started), crashes unbounded in the operation's steps\""; liveness_tasks ;;
		--witnesses) echo "echo '== witnesses: each event must be reachable (the checks are not vacuous)'"; witness_tasks ;;
		--seeded) echo "echo '== seeded bugs: spin must find each'"; seeded_tasks ;;
		--variants) echo "echo '== variants and findings (README.md, \"Findings\")'"; variant_tasks ;;
		esac
	done
}

for arg in "$@"; do
	case "$arg" in
	--safety|--liveness|--seeded|--witnesses|--variants) ;;
	*) echo "usage: check.sh [--safety] [--liveness] [--seeded] [--witnesses] [--variants]" >&2; exit 2 ;;
	esac
done
if [ $# -eq 0 ]; then
	set -- --safety --liveness --witnesses --seeded
fi
start=$SECONDS
run < <(tasks "$@")
echo "== $((SECONDS - start))s"
if [ "$failed" -ne 0 ]; then
	echo "model check FAILED" >&2
	exit 1
fi
echo "model check passed"
