/*
 * pgsaga's claim / lease / fence / call / resume protocol for one idempotency key, as a Promela
 * model for spin. README.md beside this file maps every step to the Go code and SQL that
 * implements it, states the bounds and the assumptions, and lists the seeded bugs.
 *
 * The operation: atomic phase P1 (business write W1, undo U1) -> external call C (a charge at a
 * provider, keyed by a reference) -> atomic phase P2 (business write W2, stores the response).
 *
 * Actors: the first request, a duplicate (or the client's retry), the resumer (the worker), an
 * operator (resume of a parked key, settle), the clock and the provider. Every execution may
 * crash before any of its steps (its open transaction is lost, it is gone), within a crash
 * budget (MAXCRASH, or any number with CRASH_ANY), and may be paused anywhere and go on later
 * (a zombie): the clock runs while it does not. With LOST_COMMITS the database may fail over to
 * a standby that lacks its last commits (the failover process); with WINDOW_SHRINK the
 * provider's declared in-flight window may drop (the provider); with KEYS the provider also
 * honours idempotency keys; with GC retention deletes the completed key and leaves its tombstone
 * (the gc process), the client retries after that, and another request comes under the key (the
 * other process).
 *
 * One step of an execution is one atomic transition: a crash, or one database statement (with
 * its commit) or one exchange with the provider, plus the local bookkeeping up to the next one.
 * A transaction's business writes are invisible until its commit, so a crash inside a
 * transaction is the same as a crash before its commit: the commit is the step.
 *
 * Time is relative: every deadline is a count of ticks left (0 = passed) that the clock
 * decrements, so the model runs for unbounded time in a finite state space, and the clock ticks
 * only while something still counts down, so a state where nothing can move is a real end.
 *
 * Fencing tokens: an execution's token is the slot of the actor running it. Each actor runs one
 * execution at a time and a crashed execution never acts again, so "a takeover wrote a new
 * token" is "another actor, or a later execution of this one, holds the key", and the state
 * space stays finite.
 */

/* ---- bounds (README.md, "Bounds") ---- */
#ifndef L
#define L 2            /* lease length, ticks */
#endif
#ifndef M
#define M 0            /* the call's local deadline is M ticks before the lease's end */
#endif
#ifndef INFLIGHT
#define INFLIGHT 1     /* provider's max in-flight time: a sent request lands within this */
#endif
#ifndef DELAY
#define DELAY 1        /* next_attempt_at after a transient failure, ticks */
#endif
#ifndef MAXATT
#define MAXATT 2       /* MaxAttempts */
#endif
#ifndef MAXCRASH
#define MAXCRASH 2     /* crashes in the whole run */
#endif
#ifndef OPRESUMES
#define OPRESUMES 1    /* operator resumes of a parked key */
#endif
#ifndef OPBUDGET
#define OPBUDGET MAXATT /* executions the operator's resume allows (a fresh budget) */
#endif
#ifndef TRIES_B
#define TRIES_B 1      /* takeovers the duplicate / retrying client may make */
#endif
#ifndef HBMAX
#define HBMAX 1        /* heartbeats per call */
#endif
#ifndef PENDMAX
#define PENDMAX 1      /* attempts that find the charge pending before its settle window ends */
#endif
#ifndef MAXLOSS
#define MAXLOSS 1      /* failovers that lose commits (LOST_COMMITS) */
#endif
#ifndef WSMALL
#define WSMALL 0       /* the in-flight window the provider may drop to (WINDOW_SHRINK) */
#endif
#if defined(LOST_QUIET) && !defined(LOST_ANYTIME)
#define LOST_ANYTIME   /* the standby's timers run on; the failover only when nothing can be sent */
#endif
#if defined(LOST_COMMITS) && defined(RENEW_ON_RESUME)
#error "LOST_COMMITS assumes the takeover journals the call's row (a token that survives a loss brings its row)"
#endif
#if defined(LOST_COMMITS) && defined(GC)
#error "LOST_COMMITS and GC are checked apart: both make the client's retry claim a key that is gone"
#endif
#define NFL 3          /* requests in flight the model has room for (asserted) */

/* Quiet after a moment measured when a call ended (the execution stopped waiting, or recorded
 * its outcome): that moment is strictly after the call's last send, but a tick cannot order two
 * events inside it, so "the in-flight time after it" is one tick more. (A row's deadline needs
 * no such tick: sends happen in ticks strictly before it.) */
#define ENDED_QUIET (INFLIGHT + 1)

/* execution slots, which are also the fencing tokens */
#define EA 0           /* the first request */
#define EB 1           /* the duplicate / client retry */
#define ER 2           /* the resumer */
#define EO 3           /* the operator */
#define STALE 8        /* a token no execution holds any more (a loss brought back an old one) */
#define NOTOK 9

/* key status */
#define NONE 0
#define STARTED 1
#define COMPLETED 2
#define FAILED 3

/* recovery points */
#define RP_P1 1            /* P1 committed, C next */
#define RP_COMP 2          /* compensate:P1 */
#define RP_COMPENSATED 3
#define RP_FINISHED 4

/* call outcomes, as the journal records them */
#define O_NONE 0           /* in flight, or its execution died before recording it */
#define O_SUCC 1
#define O_DECL 2
#define O_FB 3             /* failed_before: certainly not done */
#define O_PEND 4
#define O_UNK 5

/* the charge the provider holds for the reference */
#define C_NONE 0
#define C_SUCC 1
#define C_DECL 2
#define C_PEND 3

/* parked_reason */
#define PK_NONE 0
#define PK_EXHAUSTED 1
#define PK_PERMANENT 2
#define PK_UNKNOWN 3

/* the outcome decided before compensating */
#define D_NONE 0
#define D_BUSINESS 1       /* a business rejection: completes the key with its response */
#define D_PERMANENT 2      /* a permanent failure: parks the key */

/* ---- the key row ---- */
byte status = NONE;
byte rp;
byte tok = NOTOK;
byte lease;            /* ticks until lease_end */
byte next;             /* ticks until next_attempt_at */
byte attempts;         /* executions counted against the budget (attempts - attempts_unspent) */
byte parked;
byte decided;

/* ---- the call journal: one row per attempt of C ----
 * Only what the protocol's decisions read is kept: whether a row may have reached the provider
 * (its outcome is anything but failed_before) and the ticks until coalesce(ended_at, deadline)
 * plus the provider's in-flight time has passed (0: quiet). The latest row of each execution slot is kept
 * apart; the rows of a slot's earlier executions merge into one summary (any may have reached,
 * the latest quiet time), which is exact for those decisions since every timer runs down at the
 * same rate. */
bit rreach[4];         /* the slot's latest row may have reached the provider */
byte rq[4];            /* ... ticks until it is quiet */
bit hreach;            /* some older row may have reached the provider */
byte hq;               /* ... ticks until all of them are quiet */
bit pendrec;           /* a row records the charge pending, with its provider id */
byte pendings;         /* attempts that found it pending (they spend no budget) */
#ifdef WINDOW_SHRINK
/* The in-flight window each row holds: the longest the provider declared at one of its
 * attempt's sends, journaled before that send (0 until its attempt sends: a row starts with none,
 * the worst case of the window it is inserted with). rq stays the ticks until the row's quiet
 * time plus the longest window (INFLIGHT: the window only drops), so "w has passed since it went
 * quiet" is rq + w <= INFLIGHT. For the older rows, hq2 is the ticks until every one of them has
 * been quiet for its own window (max over them of rq + rw - INFLIGHT): with hq it is exact for
 * the rule below. */
byte rw[4];
byte hq2;
bit rdone[4];          /* (ghost) the row's outcome is recorded */
#endif

/* the reference the key's P1 saved, which the call sends and inquires by: derived from the
 * intent (tenant, actor, key), the same on every execution that commits P1; with BUG_PHASE_ID
 * an id P1 draws, a new one on every execution that commits P1 */
byte ref;

/* ---- each execution's own view ---- */
byte dl[4];            /* ticks until its local deadline: it never sends once this is 0 */
bit incall[4];         /* inside its call: journal row committed, call not ended */
byte resp[4];          /* the provider's answer to the request it waits for (C_*) */
byte oq[4];            /* ticks until its own unanswered send can no longer land */
byte myref[4];         /* the reference it read with the key */
#ifdef BUG_WINDOW_WITH_OUTCOME
byte sw[4];            /* the longest window declared at its sends, journaled with its outcome */
#define OWN_WINDOW(e) sw[e]
#else
#define OWN_WINDOW(e) rw[e]
#endif
#ifdef BUG_NOW_LEASE
byte sb[4];            /* ticks since its open transaction began (now()) */
bit inphase[4];
#endif

/* ---- the provider: inquiry by reference, no idempotency keys (every request that lands
 * charges); with KEYS it also de-duplicates by key (the reference): a request whose key already
 * has a charge is answered with that charge and creates nothing ---- */
bit flon[NFL];         /* in flight */
byte flrem[NFL];       /* ticks before it must have landed or been lost */
byte flto[NFL];        /* 1 + the slot of the execution waiting for its answer, 0: nobody */
byte flfrom[NFL];      /* (ghost) the slot of the execution that sent it */
byte flref[NFL];       /* the reference it carries */
#ifdef WINDOW_SHRINK
bit flbig[NFL];        /* (ghost) sent under the longer window */
#endif
byte chg = C_NONE;     /* the first charge for the intent */
byte chgref;           /* ... its reference (inquiry by reference finds it only under that one) */
byte ncharges;         /* charges for the intent, under any reference */
#ifdef WINDOW_SHRINK
byte win = INFLIGHT;   /* the in-flight window the provider declares now (it may drop once) */
#endif
#ifdef BUG_PHASE_ID
byte nextid;           /* ids P1 drew so far (a fresh id is never drawn twice) */
#endif

/* ---- ghosts: what the properties count ---- */
byte w1, w2, u1, settled;
byte crashes;
byte execs;            /* executions started under the current attempt budget */

/* ---- the intent's client ---- */
#if defined(LOST_COMMITS) || defined(GC)
bit claimed;           /* the first request's claim committed (the intent exists) */
bit answered;          /* the client got its answer (a completed key's response, or 410 after
                        * GC): no more retries */
#endif

#ifdef GC
/* ---- retention (GC): the completed key deleted, its tombstone written, in one transaction ----
 * The tombstone keeps the intent's scope, a hash of its key, its operation and a digest of its
 * request; a claim under the key probes it after its row is in. Its window is longer than any
 * retry the model explores (unless TOMB_EXPIRES, in --variants). */
bit gcopen;            /* a GC batch deleted the key and wrote its tombstone, not committed yet:
                        * readers still see the key; a claim's INSERT waits on its unique entry */
bit tomb;              /* the key's tombstone, committed */
#ifdef BUG_GC_SPLIT
bit tombdue;           /* the delete committed; the tombstone's own transaction is still to come */
#endif
bit snapped;           /* the client's retry: its claim statement took its snapshot, */
bit snapkey;           /* ... which holds the key (a GC deleting it had not committed), */
bit snaptomb;          /* ... or the key's tombstone */
bit waiting;           /* ... and it waits on the key GC is deleting */
byte othersclaim;      /* (ghost) claims of the key by another request */
bit other410;          /* (ghost) another request answered 410 */
#endif

#ifdef LOST_COMMITS
/* ---- the standby: the key as of the last commit it replayed (asynchronous replication) ----
 * A failover brings it back: status, recovery point, token, attempts, the journal's rows and the
 * business writes that committed with them (W1, W2, U1, a settle: their ghosts revert too, so
 * "at most once" is relative to the database that survived). Its timers are not kept: a
 * failover starts the standby only once every lease and in-flight window ran out (unless
 * LOST_ANYTIME, which keeps them). The provider and the clients forget nothing. */
byte s_status, s_rp, s_tok = NOTOK, s_attempts, s_parked, s_decided, s_pendings, s_ref;
bit s_rreach[4], s_hreach, s_pendrec;
byte s_w1, s_w2, s_u1, s_settled, s_execs;
#ifdef LOST_ANYTIME
byte s_lease, s_next, s_rq[4], s_hq;
bit lostlease[4];      /* the execution's lease came from a commit the failover lost */
#endif
byte losses;           /* failovers so far */
bit lostkey;           /* a failover brought back "no key" */
bit chgold;            /* the charge landed before the last failover */
bit prefo[4];          /* (ghost) the slot's execution started before the last failover */
byte w1all, w2all;     /* W1, W2 commits on any primary, forgotten ones included */
#endif

/* ---- fencing: the token matches and the key is started ---- */
#ifdef BUG_NO_FENCE
#define FENCED(e) (status == STARTED)
#else
#define FENCED(e) (status == STARTED && tok == e)
#endif

/* a crash instead of the step it precedes (inside the step's atomic block). With CRASH_ANY,
 * the operation's steps may crash any number of times, uncounted (a poison key kills every
 * process that runs it, and a run that crashes forever is a cycle); the park after a takeover
 * past the budget runs none of the operation's code, and its crashes stay counted (unless
 * CRASH_PARK: README.md, "Findings"). */
#define CRASH_COUNTED if :: crashes < MAXCRASH -> crashes++; GONE :: skip fi
#ifdef CRASH_ANY
#define CRASH if :: GONE :: skip fi
#else
#define CRASH CRASH_COUNTED
#endif

/* the process is gone: it sends nothing more from this moment */
#define GONE incall[e] = 0; dl[e] = 0; goto crashed

/* a fenced write found the lease taken over (or the key gone): the execution stops */
#ifdef GC
#define FENCED_OUT SEEN(W_FENCED); if :: status == NONE && tomb -> SEEN(W_FENCED_GONE) :: else -> skip fi; goto stop
#else
#define FENCED_OUT SEEN(W_FENCED); goto stop
#endif

/* vacuity checks: with PGSAGA_WITNESS=n in the verifier's environment, the model asserts that
 * event n never happens, and spin must find a run where it does (check.sh, "witnesses") */
c_code {
	static int witness_id = -1;
	static int witness(void) {
		if (witness_id < 0) {
			const char *s = getenv("PGSAGA_WITNESS");
			witness_id = s ? atoi(s) : 0;
		}
		return witness_id;
	}
	#define WITNESS_IS(n) (witness() == (n))
}
#define SEEN(n) if :: c_expr { WITNESS_IS(n) } -> assert(false) :: else -> skip fi
#define W_RESEND 1         /* a send after an empty inquiry, once the earlier ones were quiet */
#define W_FOUND 2          /* an inquiry found the earlier attempt's charge and took it */
#define W_FENCED 3         /* a zombie's write was fenced */
#define W_LATE_LANDING 4   /* a request landed after its sender stopped waiting for it */
#define W_RESUMED_UNDO 5   /* U1 ran in an execution that resumed at compensate:P1 */
#define W_PARK_UNKNOWN 6   /* parked outcome_unknown */
#define W_PARK_EXHAUSTED 7 /* parked attempts_exhausted by a takeover past the budget */
#define W_PARK_PERMANENT 8 /* parked permanent, after its compensation */
#define W_SETTLED 9        /* an operator settled a parked key */
#define W_OP_COMPLETES 10  /* the operator's resume completed the key through P2 */
#define W_HEARTBEAT 11     /* a heartbeat renewed the lease during a call */
#define W_ZOMBIE_SENT 12   /* a request sent by an execution that has since been superseded
                            * landed (the in-flight window at work) */
#define W_INPROC_RESEND 13 /* an in-process round sent again after its own unanswered send */
#define W_READ_BACK 14     /* a charge journaled pending was read back final and taken */
#define W_RENEWED 15       /* a resumed call's own renewal committed its row (RENEW_ON_RESUME) */
#define W_LOST_CLAIM 16    /* the first request lost its claim's answer and gave the lease back */
#define W_W1_AGAIN 17      /* W1 committed again: a failover lost the key, the client retried */
#define W_W2_AGAIN 18      /* W2 committed again: a failover lost the first one */
#define W_REFOUND 19       /* after a failover lost the key, the re-execution's inquiry found the
                            * charge made before it (the same reference) */
#define W_RECONCILED 20    /* the run ended with a charge whose key the failover lost, its client
                            * answered: only reconciliation finds it */
#define W_TOKEN_KEPT 21    /* an execution that started before a failover wrote after it, its
                            * token brought back by the standby */
#define W_SHRUNK_LANDED 22 /* a request sent under the longer window landed after the drop */
#define W_RECORDED_WAIT 23 /* a send after an empty inquiry, the window dropped, an earlier attempt
                            * that recorded its outcome holds the longer window */
#define W_DEAD_WAIT 24     /* a send after an empty inquiry, the window dropped, an earlier attempt
                            * that may have reached and recorded no outcome (its execution died
                            * first) holds the longer window, journaled before it sent */
#define W_KEY_ANSWERED 25  /* (KEYS) a request landed with the key of the charge made before: the
                            * provider answered that charge */
#define W_EXPIRED 26       /* (GC) the client's retry after GC answered 410 from the tombstone */
#define W_GC_WAITED 27     /* (GC) a claim waited on the key for the GC deleting it, went in when
                            * the GC committed, and its probe answered from the tombstone */
#define W_OTHER_422 28     /* (GC) another request under the deleted key answered 422 */
#define W_FENCED_GONE 29   /* (GC) a zombie's write found its key deleted by GC: fenced */
#define W_KEY_IN_SNAPSHOT 30 /* (GC) a claim that did not wait went in after a GC that committed
                            * after its snapshot: the key in the snapshot refused it */

/* With LOST_ANYTIME, an execution whose lease came from a commit the failover lost may still
 * send until its local deadline: the properties about leases and windows hold for the others
 * (what they would say of it is the point of that variant: README.md, "Findings") */
#ifdef LOST_ANYTIME
#define LOSTLEASE(k) lostlease[k]
#else
#define LOSTLEASE(k) false
#endif

/* e is inside its sending window: its row is committed, its call not over, its deadline ahead */
#define WINDOW(k) (incall[k] && dl[k] > 0 && !LOSTLEASE(k))

/* PROPERTY no call running twice at once: when e's sending window opens or is extended, no
 * other execution is inside its own */
inline open_window(e) {
	incall[e] = 1;
	assert((e == EA || !WINDOW(EA)) && (e == EB || !WINDOW(EB)) &&
	       (e == ER || !WINDOW(ER)) && (e == EO || !WINDOW(EO)))
}

/* the call ended: the execution sends nothing more, its local deadline no longer matters */
inline leave_call(e) {
	incall[e] = 0;
	dl[e] = 0
}

/* what an inquiry by the execution's reference finds: the intent's charge if it was made under
 * that reference (a charge under another reference is not found) */
#define INQUIRY (chgref == myref[e] -> chg : C_NONE)
#ifdef LOST_COMMITS
#define REFOUND if :: lostkey && chgold -> SEEN(W_REFOUND) :: else -> skip fi
#else
#define REFOUND skip
#endif

/* a row other than this attempt's (slot k's latest) that may have reached the provider */
#define MAYREACH(k) (rreach[k] && (k != e || !hasrow))
#define ANYREACH (hreach || MAYREACH(0) || MAYREACH(1) || MAYREACH(2) || MAYREACH(3))
/* ... every such row quiet (rq: README.md, "Assumptions"), and this execution's own unanswered
 * send too (an in-process round). With WINDOW_SHRINK a row is quiet once the longer of the
 * window recorded at its send and the window declared now has passed since its quiet time
 * (with BUG_CURRENT_WINDOW: the window declared now only) */
#ifdef WINDOW_SHRINK
#define WMAX(a, b) ((a) > (b) -> (a) : (b))
#ifdef BUG_CURRENT_WINDOW
#define ROWQUIET(k) (rq[k] + win <= INFLIGHT)
#define OLDQUIET (hq + win <= INFLIGHT)
#else
#define ROWQUIET(k) (rq[k] + WMAX(rw[k], win) <= INFLIGHT)
#define OLDQUIET (hq2 == 0 && hq + win <= INFLIGHT)
#endif
#else
#define ROWQUIET(k) (rq[k] == 0)
#define OLDQUIET (hq == 0)
#endif
#define QUIET(k) (!MAYREACH(k) || ROWQUIET(k))
#ifdef WINDOW_SHRINK
/* (witnesses) an earlier row that may have reached holds a window longer than the one declared
 * now, its outcome recorded; ... its outcome not recorded (its execution died first) */
#define RECW(k) (MAYREACH(k) && rdone[k] && rw[k] > win)
#define DEADW(k) (MAYREACH(k) && !rdone[k] && rw[k] > win)
#endif
#define ALLQUIET ((!hreach || OLDQUIET) && QUIET(0) && QUIET(1) && QUIET(2) && QUIET(3) && oq[e] == 0)

/* the journal row for C, in the statement that writes the lease it runs under; it reads the
 * earlier rows back (need: one of them may have reached the provider) */
inline add_row(e) {
	if
	:: rreach[e] -> hreach = 1; if :: rq[e] > hq -> hq = rq[e] :: else -> skip fi
#ifdef WINDOW_SHRINK
		; if :: rq[e] + rw[e] > INFLIGHT + hq2 -> hq2 = rq[e] + rw[e] - INFLIGHT :: else -> skip fi
#endif
	:: else -> skip
	fi;
	rreach[e] = 1;         /* outcome none: in flight */
	rq[e] = lease + INFLIGHT;
#ifdef WINDOW_SHRINK
	rw[e] = 0;             /* no window journaled yet */
	rdone[e] = 0;
#endif
	hasrow = 1;
#if defined(LOST_COMMITS) && !defined(KEYS) && !defined(BUG_NO_FIRST_INQUIRY)
	/* a provider with inquiry that cannot de-duplicate by key is asked before the first send
	 * too: a failover may have lost the journal rows of an earlier execution's attempts */
	need = 1
#else
	/* asked only when an earlier attempt may have reached the provider: with KEYS the same key
	 * is answered with the first charge; without lost commits every attempt that may have
	 * reached has its row, so the inquiry the code makes when none has is certainly empty */
	need = ANYREACH
#endif
}

/* the call's outcome rides in the execution's next key write (ended_at): a row certainly not
 * done may not have reached the provider; any other row is quiet once its ended_at plus the
 * in-flight time has passed (its execution sent nothing after its call ended), or its deadline
 * plus the in-flight time if that is sooner (the code takes ended_at even when it is later:
 * waiting longer is never less safe, so the model checks the sooner of the two). The window a
 * row holds was journaled before its sends, not here. */
inline record(res) {
	if
	:: hasrow && res == O_FB -> rreach[e] = 0; rq[e] = 0
	:: hasrow && res != O_FB ->
#ifndef DEADLINE_ONLY
		if :: rq[e] > ENDED_QUIET -> rq[e] = ENDED_QUIET :: else -> skip fi;
#endif
#ifdef WINDOW_SHRINK
		rdone[e] = 1;
#ifdef BUG_WINDOW_WITH_OUTCOME
		rw[e] = sw[e];
#endif
#endif
		if :: res == O_PEND -> pendrec = 1 :: else -> skip fi
	:: else -> skip
	fi
}

/* PROPERTY attempt budget: no more than MAXATT executions start under one budget, so a key
 * whose executions always crash parks (a takeover past the budget parks and runs nothing) */
#define BUDGET_OK (attempts > MAXATT || execs <= MAXATT)

/* a new execution of slot e writes its token: a token of e's that the standby still holds is
 * now an earlier execution's, which no process runs any more (STALE), and e's lease is fresh */
#ifdef LOST_COMMITS
#ifdef LOST_ANYTIME
#define NEW_EXECUTION(e) if :: s_tok == e -> s_tok = STALE :: else -> skip fi; prefo[e] = 0; lostlease[e] = 0
#else
#define NEW_EXECUTION(e) if :: s_tok == e -> s_tok = STALE :: else -> skip fi; prefo[e] = 0
#endif
/* (witness) a fenced write by an execution that started before the failover went through */
#define KEPT(e) if :: prefo[e] -> SEEN(W_TOKEN_KEPT) :: else -> skip fi
#else
#define NEW_EXECUTION(e) skip
#define KEPT(e) skip
#endif

/* the reference P1 saves with the claim: derived from the intent, the same on every execution;
 * with BUG_PHASE_ID an id drawn by P1, a new one on every execution that commits P1 */
#ifdef BUG_PHASE_ID
#define NEW_REF ref = nextid; nextid++
#else
#define NEW_REF ref = 0
#endif

/* a takeover statement (conditional UPDATE): new token, lease from the statement's own time,
 * attempt counted; it returns the recovery point and the decided outcome. At a recovery point
 * right before the call, the same statement journals the call's row, the new lease's end as its
 * deadline, unless the execution will park at once (its budget spent: a takeover past the budget
 * journals nothing, and the operator's fresh budget never is). With RENEW_ON_RESUME it journals
 * nothing and the execution renews the lease with the row in a write of its own (renew:), as the
 * code does when the takeover journaled no row (README.md, "The protocol"). */
inline takeover(e) {
	tok = e;
	NEW_EXECUTION(e);
	myref[e] = ref;        /* the saved values: the reference P1 produced */
	lease = L;
	dl[e] = L - M;
	attempts++;
	execs++;
#ifdef BUG_POISON
	if :: e == ER -> attempts-- :: else -> skip fi;  /* the resumer's claim counts no attempt */
#endif
	assert(BUDGET_OK);
#ifdef PARK_IN_TAKEOVER
	/* the takeover statement parks a key past its budget by itself */
	if
	:: attempts > MAXATT -> SEEN(W_PARK_EXHAUSTED); status = FAILED; parked = PK_EXHAUSTED; lease = 0
	:: else -> skip
	fi;
#endif
	cur_rp = rp;
	d = decided;
	havewin = 0;
#ifndef RENEW_ON_RESUME
	if
	:: status == STARTED && rp == RP_P1 && attempts <= MAXATT -> add_row(e); open_window(e); havewin = 1
	:: else -> skip
	fi
#endif
}

/* heartbeat: a fenced renewal that also extends the row's deadline; a lease found lost cancels
 * the call */
inline heartbeat(e) {
	hb++;
	CRASH;
	if
	:: FENCED(e) ->
		SEEN(W_HEARTBEAT);
#ifdef LOST_ANYTIME
		lostlease[e] = 0;
#endif
		lease = L; dl[e] = L - M; open_window(e);
#ifndef BUG_HB_NO_ROW
		if :: hasrow -> rq[e] = L + INFLIGHT :: else -> skip fi
#endif
	:: else -> FENCED_OUT
	fi
}

/* the key's final state after its compensation */
inline final_write(d) {
	if
	:: d == D_BUSINESS -> status = COMPLETED; rp = RP_FINISHED
	:: d == D_PERMANENT -> SEEN(W_PARK_PERMANENT); status = FAILED; parked = PK_PERMANENT; rp = RP_COMPENSATED
	fi;
	lease = 0
}

/* where an execution that holds the lease starts, from the recovery point it read */
inline enter(e) {
	hb = 0;
	if
	:: !havewin -> dl[e] = 0     /* no call runs on this lease */
	:: else -> skip
	fi;
	if
	:: cur_rp == RP_P1 && havewin -> goto call
	:: cur_rp == RP_P1 && !havewin -> goto renew
	:: cur_rp == RP_COMP -> goto undo
	:: cur_rp == RP_COMPENSATED -> goto final_only
	fi
}

/*
 * The steps of one execution holding the lease (tok == e), entered through enter(e).
 * Exits: goto done (ended), stop (fenced: the lease is lost, it writes nothing more), crashed.
 */
inline steps(e) {
	skip;     /* (spin places no label first in an inline) */
renew:
	/* a fenced renewal carrying the call's journal row, before the call (only when the takeover
	 * journaled none: RENEW_ON_RESUME) */
	atomic {
		CRASH;
#ifdef BUG_NO_RENEWAL
		/* sent on the takeover's lease, no journal row, the call's own timeout from its start */
		need = ANYREACH; dl[e] = L - M; open_window(e)
#else
		if
		:: FENCED(e) -> SEEN(W_RENEWED); lease = L; dl[e] = L - M; add_row(e); open_window(e)
		:: else -> FENCED_OUT
		fi
#endif
	}
call:
	/* an earlier attempt may have reached the provider: resolve it, never send blindly */
	if
	:: need && pendrec ->
		/* the journal knows the charge, pending: read it back, never send */
		atomic {
			CRASH;
			if
			:: chg == C_SUCC -> SEEN(W_READ_BACK); res = O_SUCC; leave_call(e); goto got
			:: chg == C_DECL -> SEEN(W_READ_BACK); res = O_DECL; leave_call(e); goto got
			:: chg == C_PEND -> res = O_PEND; leave_call(e); goto pending
			fi
		}
	:: need && !pendrec ->
		atomic {
#if !defined(BUG_EMPTY_INQUIRY) && !defined(BUG_STALE_INQUIRY)
			ALLQUIET ->      /* wait (locally) for QuietAt + in-flight time, then ask */
#endif
			CRASH;
			if               /* inquiry by reference */
			:: INQUIRY == C_SUCC -> SEEN(W_FOUND); REFOUND; res = O_SUCC; leave_call(e); goto got
			:: INQUIRY == C_DECL -> SEEN(W_FOUND); REFOUND; res = O_DECL; leave_call(e); goto got
#ifndef BUG_PENDING_RESEND
			:: INQUIRY == C_PEND -> REFOUND; res = O_PEND; leave_call(e); goto pending
#else
			:: INQUIRY == C_PEND -> skip
#endif
			:: INQUIRY == C_NONE -> skip     /* empty */
			fi
		}
#ifdef BUG_STALE_INQUIRY
		ALLQUIET;        /* waits for QuietAt after asking: the empty answer is stale */
#endif
	:: else -> skip
	fi;
send:
	atomic {
		CRASH;
		if
		:: dl[e] > 0 ->
			/* PROPERTY a call is sent only under a live lease its execution holds */
			assert((tok == e && lease > 0 && status == STARTED) || LOSTLEASE(e));
			if :: need -> SEEN(W_RESEND) :: else -> skip fi;
			if :: inproc -> SEEN(W_INPROC_RESEND) :: else -> skip fi;
#ifdef WINDOW_SHRINK
			if
			:: need && win < INFLIGHT && (RECW(0) || RECW(1) || RECW(2) || RECW(3)) -> SEEN(W_RECORDED_WAIT)
			:: need && win < INFLIGHT && (DEADW(0) || DEADW(1) || DEADW(2) || DEADW(3)) -> SEEN(W_DEAD_WAIT)
			:: else -> skip
			fi;
#endif
			if
			:: !flon[0] -> slot = 0
			:: else -> if
				:: !flon[1] -> slot = 1
				:: else -> assert(!flon[2]); slot = 2
				fi
			fi;
			flon[slot] = 1; flto[slot] = e + 1; flfrom[slot] = e; flref[slot] = myref[e];
#ifdef WINDOW_SHRINK
#ifdef BUG_WINDOW_WITH_OUTCOME
			/* the window is kept until the outcome is recorded, not journaled before the send */
			if :: sw[e] < win -> sw[e] = win :: else -> skip fi;
#else
			/* the window declared now is journaled in the attempt's row before the request
			 * leaves (a fenced write when it is longer than the row's window; the execution
			 * holds the lease here, as asserted above, so that write is not fenced) */
			if :: hasrow && rw[e] < win -> rw[e] = win :: else -> skip fi;
#endif
			/* it lands within the window declared now */
			flrem[slot] = win; flbig[slot] = (win > WSMALL);
#else
			flrem[slot] = INFLIGHT;
#endif
			resp[e] = C_NONE
		:: dl[e] > 0 ->
			/* refused before it was sent, or an explicit "not processed": certainly not done */
			res = O_FB; leave_call(e); goto transient
		:: dl[e] > 0 && hb < HBMAX ->
			/* refused, retried in-process: a heartbeat keeps the lease, then it sends again */
			heartbeat(e); goto send
		:: dl[e] == 0 ->
			/* the local deadline passed: abandoned before sending */
			res = O_FB; leave_call(e); goto transient
		fi
	}
	/* wait for the answer; it may never come (timeout, lost request, lost answer) */
	do
	:: atomic { resp[e] != C_NONE ->
		if
		:: resp[e] == C_SUCC -> res = O_SUCC
		:: resp[e] == C_DECL -> res = O_DECL
		:: resp[e] == C_PEND -> res = O_PEND
		fi;
		leave_call(e); break }
	:: atomic { res = O_UNK; break }     /* no answer (yet): timeout, lost request or answer */
	:: atomic { hb < HBMAX -> heartbeat(e) }
	od;
	if
	:: res == O_SUCC || res == O_DECL -> goto got
	:: res == O_PEND -> goto pending
#ifndef NO_INPROC
	:: res == O_UNK && !inproc ->
		/* an in-process round (gateway.Execute): its own send may still land until the
		 * in-flight time after it stopped waiting; then ask, and send again if nothing came */
		atomic {
			inproc = 1;
#ifndef BUG_INPROC_NO_WAIT
#ifdef WINDOW_SHRINK
			/* the window declared at its sends, one tick after it stopped */
			oq[e] = OWN_WINDOW(e) + 1;
#else
			oq[e] = ENDED_QUIET;
#endif
#endif
			need = 1
		}
		goto call
#endif
	:: res == O_UNK -> atomic { leave_call(e) }; goto transient
	fi;

pending:
	/* the provider holds a charge that is not final: never send again; read it back later,
	 * spending no attempt, until its settle window ends */
	if
	:: pendings < PENDMAX -> goto transient
	:: goto park_unknown      /* past the settle window */
	fi;

got:
	/* P2: W2 and the stored response commit with the call's outcome, fenced; or P2 rejects or
	 * fails permanently (rolled back) and the operation compensates */
	atomic {
		CRASH;
		if
		:: FENCED(e) ->
			/* PROPERTY W2 at most once (in the database that survived) */
			assert(w2 == 0);
			w2++;
#ifdef LOST_COMMITS
			w2all++;
			if :: w2all > 1 -> SEEN(W_W2_AGAIN) :: else -> skip fi;
#endif
			KEPT(e);
			/* PROPERTY the outcome stored is the provider's */
			assert((res == O_SUCC && chg == C_SUCC) || (res == O_DECL && chg == C_DECL));
			status = COMPLETED; rp = RP_FINISHED; lease = 0;
			if :: e == EO -> SEEN(W_OP_COMPLETES) :: else -> skip fi;
			record(res);
			goto done
		:: !FENCED(e) -> FENCED_OUT
		:: d = D_BUSINESS
		:: d = D_PERMANENT
		fi
	}

compensate:
	atomic {
		CRASH;
		if
		:: FENCED(e) -> rp = RP_COMP; decided = d; lease = L; record(res)
		:: else -> FENCED_OUT
		fi
	}

undo:
#ifdef BUG_COMP_SPLIT
	/* the undo commits in its own (fenced) transaction ... */
	atomic {
		CRASH;
		if
		:: FENCED(e) -> assert(u1 == 0); u1++
		:: else -> FENCED_OUT
		fi
	}
	/* ... and the record that it ran in another */
	atomic {
		CRASH;
		if
		:: FENCED(e) -> rp = RP_COMPENSATED; final_write(d); goto done
		:: else -> FENCED_OUT
		fi
	}
#else
	/* U1 and the record that it ran (the final state) commit together */
	atomic {
		CRASH;
		if
		:: FENCED(e) ->
			/* PROPERTY U1 at most once */
			assert(u1 == 0);
			u1++;
			if :: cur_rp == RP_COMP -> SEEN(W_RESUMED_UNDO) :: else -> skip fi;
			rp = RP_COMPENSATED; final_write(d); goto done
		:: else -> FENCED_OUT
		fi
	}
#endif

final_only:
	/* resumed at compensated: no undo runs */
	atomic {
		CRASH;
		if
		:: FENCED(e) -> final_write(d); goto done
		:: else -> FENCED_OUT
		fi
	}

park_unknown:
	/* an outcome nothing can resolve: parked, no compensation */
	atomic {
		CRASH;
		if
		:: FENCED(e) -> SEEN(W_PARK_UNKNOWN); status = FAILED; parked = PK_UNKNOWN; lease = 0; record(res); goto done
		:: else -> FENCED_OUT
		fi
	}

transient:
	/* one fenced write: the lease given back, the next attempt scheduled, the outcome recorded;
	 * parked instead when the budget is spent */
	atomic {
		CRASH;
		if
		:: FENCED(e) ->
			KEPT(e);
			if
			:: res == O_PEND ->
				/* a pending call spends no attempt */
				attempts--; execs--; pendings++; next = DELAY
			:: res != O_PEND && attempts >= MAXATT -> status = FAILED; parked = PK_EXHAUSTED
			:: res != O_PEND && attempts < MAXATT -> next = DELAY
			fi;
			lease = 0;
			record(res);
			goto done
		:: else -> FENCED_OUT
		fi
	}

exhausted:
	/* a takeover past the budget: parked with a fenced write, no step runs */
	atomic {
#ifdef CRASH_PARK
		CRASH;
#else
		CRASH_COUNTED;
#endif
		if
		:: FENCED(e) -> SEEN(W_PARK_EXHAUSTED); status = FAILED; parked = PK_EXHAUSTED; lease = 0
		:: else -> skip
		fi;
		goto done
	}
}

/* a crashed or finished execution sends nothing more; its process forgets it */
inline forget(e) {
	d_step {
		incall[e] = 0;
		dl[e] = 0;
		if :: flto[0] == e + 1 -> flto[0] = 0 :: else -> skip fi;
		if :: flto[1] == e + 1 -> flto[1] = 0 :: else -> skip fi;
		if :: flto[2] == e + 1 -> flto[2] = 0 :: else -> skip fi;
		resp[e] = C_NONE;
		oq[e] = 0;
		myref[e] = 0;
#ifdef BUG_WINDOW_WITH_OUTCOME
		sw[e] = 0;
#endif
#ifdef LOST_COMMITS
		prefo[e] = 0;
#endif
#ifdef LOST_ANYTIME
		lostlease[e] = 0;
#endif
		cur_rp = 0; d = 0; res = 0; hb = 0; slot = 0; havewin = 0; need = 0; hasrow = 0; inproc = 0
	}
}

#define LOCALS byte cur_rp, d, res, hb, slot; bit havewin, need, hasrow, inproc

/*
 * The first request: P1 and the claim in one commit. (A duplicate whose P1 commits first is the
 * same run with the roles swapped; one whose insert conflicts wrote nothing, which is where
 * duplicate() starts.)
 */
proctype first() {
	LOCALS;
	byte e = EA;

#ifdef BUG_NOW_LEASE
	atomic { sb[e] = 0; inphase[e] = 1 }   /* BEGIN: now() is this moment; P1 may wait */
#endif
	atomic {
#ifdef BUG_NOW_LEASE
		CRASH;
#endif
		/* P1's commit: W1, the key, the lease, attempt 1, the journal row for C */
		/* PROPERTY W1 at most once (in the database that survived) */
		assert(status == NONE && w1 == 0);
		w1++;
		status = STARTED; rp = RP_P1; tok = e; attempts = 1; next = 0;
		NEW_REF; myref[e] = ref;
#if defined(LOST_COMMITS) || defined(GC)
		claimed = 1;
#endif
#ifdef LOST_COMMITS
		w1all++;
#endif
#ifdef BUG_NOW_LEASE
		lease = L - sb[e]; inphase[e] = 0;
#else
		lease = L;
#endif
		dl[e] = L - M;
		execs = 1;
		add_row(e);
		open_window(e);
		cur_rp = RP_P1; havewin = 1;
#ifndef NO_LOST_CLAIM
		/* or the claim's answer is lost: the execution learns that its claim committed only by
		 * reading the key back (its token), never sends, and gives the lease back in a write of
		 * its own (transient:) that records nothing of the call: the row stays as the claim
		 * wrote it, in flight until its deadline */
		if
		:: skip
		:: leave_call(e); hasrow = 0; goto lost_claim
		fi;
#endif
		enter(e)
	}
	steps(e);
#ifndef NO_LOST_CLAIM
lost_claim:
	SEEN(W_LOST_CLAIM);
	goto transient;
#endif
crashed:
stop:
done:
	forget(e)
}

/*
 * A duplicate, or the client's retry, deciding on the stored key. Replay, parked, 409 and 503
 * write nothing and are not steps; when the key is started, its lease expired and its next
 * attempt due, it takes the key over (one conditional UPDATE) and runs it; past the budget it
 * parks the key. The client retries up to TRIES_B times.
 *
 * With LOST_COMMITS it is the client of the first request: once it has its answer (the
 * completed key's response, from the first request or a replay) it never retries; until then
 * it retries with the same key, and when a failover lost the key it claims it again: P1 (W1)
 * and the claim in one commit, as the first request did.
 *
 * With GC it is the client of the first request too, whose answer was lost: it retries with the
 * same key until it has an answer, the key's response replayed, or 410 once GC deleted the key.
 * Every retry begins with the claim (an INSERT of the key row that conflicts with a stored key),
 * whose statement takes its snapshot first; when the key is gone, the row goes in and the probe
 * in its RETURNING sees, in that snapshot, the key's tombstone or the key itself: PGS02 rolls the
 * claim and P1 back. A claim that reaches the key's unique entry while a GC's delete of it is not
 * committed waits for that GC, and goes in when it commits.
 */
#if defined(LOST_COMMITS) || defined(GC)
#define RETRYING (!answered)
#else
#define RETRYING true
#endif

/* the client's retry claims the key again, the key being gone: P1 (W1) and the claim in one
 * commit, as the first request did */
inline reclaim(e) {
	/* PROPERTY W1 at most once (in the database that survived) */
	assert(w1 == 0);
	w1++;
#ifdef LOST_COMMITS
	w1all++;
	SEEN(W_W1_AGAIN);
#endif
	status = STARTED; rp = RP_P1; tok = e; attempts = 1; next = 0;
	NEW_EXECUTION(e);
	NEW_REF; myref[e] = ref;
	lease = L; dl[e] = L - M;
	execs = 1;
	add_row(e);
	open_window(e);
	cur_rp = RP_P1; havewin = 1;
	enter(e)
}

#ifdef GC
/* what the claim's probe sees, when its row went in: the key's tombstone or the key itself in the
 * statement's snapshot (taken before any wait on the key), either of which means that GC deleted
 * the key (migration 013); with BUG_PROBE_TOMBSTONE_ONLY, the tombstone alone */
#ifdef BUG_PROBE_TOMBSTONE_ONLY
#define PROBE(key, tombstone) (tombstone)
#else
#define PROBE(key, tombstone) ((key) || (tombstone))
#endif
#endif

proctype duplicate() {
	LOCALS;
	byte e = EB;
	byte tries = TRIES_B;

end_decide:
	do
	:: atomic { tries > 0 && RETRYING && status == STARTED && lease == 0 && next == 0 ->
		tries--;
		takeover(e);
		if
		:: status != STARTED -> goto done      /* the takeover parked it (PARK_IN_TAKEOVER) */
		:: status == STARTED && attempts > MAXATT -> goto exhausted
		:: else -> enter(e)
		fi
	   }
		steps(e);
crashed:
stop:
done:
		forget(e)
#ifdef LOST_COMMITS
	:: atomic { status == COMPLETED && !answered ->
		/* the client gets the completed key's response: the first request's own answer, or a
		 * replay */
		answered = 1 }
	:: atomic { status == NONE && claimed && !answered ->
		/* a failover lost the key: the retry claims it again (P1's commit) */
		reclaim(e) }
#elif defined(GC)
	:: atomic { !answered && !snapped && claimed && (status == COMPLETED || status == NONE) ->
		/* the retry's claim statement takes its snapshot: the key as readers see it (there
		 * until the GC deleting it commits), and its tombstone */
		snapped = 1; snapkey = (status != NONE); snaptomb = tomb }
	:: atomic { snapped && status == COMPLETED && !gcopen ->
		/* the claim conflicts with the completed key: its response, replayed */
		snapped = 0; answered = 1 }
	:: atomic { snapped && gcopen && !waiting ->
		/* the claim reaches the key's unique entry and waits for the GC deleting it */
		waiting = 1 }
	:: atomic { snapped && status == NONE && claimed ->
		/* the key is gone (any GC it waited for committed): the row goes in; the probe */
		if
		:: PROBE(snapkey, snaptomb) ->
			/* PGS02: nothing is stored, nothing runs; the engine reads the tombstone */
			if
			:: tomb ->
				/* the same operation and request: 410, definitive */
				SEEN(W_EXPIRED);
				if :: waiting -> SEEN(W_GC_WAITED) :: else -> skip fi;
				if :: snapkey && !waiting -> SEEN(W_KEY_IN_SNAPSHOT) :: else -> skip fi;
				answered = 1
			:: else ->
				/* its window passed since the snapshot: answered "retry" (TOMB_EXPIRES) */
				skip
			fi
		:: else ->
			/* the probe saw neither: the key is claimed again */
			reclaim(e)
		fi;
		snapped = 0; snapkey = 0; snaptomb = 0; waiting = 0 }
#endif
#if !defined(LOST_COMMITS) && !defined(GC)
	:: tries == 0 -> break
#endif
	od
}

/*
 * The resumer: claims a due key (started, lease expired, next_attempt_at passed) with a
 * conditional UPDATE and starts it, as long as the key exists. A crash loses the execution; the
 * worker (restarted) goes on.
 */
proctype resumer() {
	LOCALS;
	byte e = ER;

end_idle:
	do
	:: atomic { status == STARTED && lease == 0 && next == 0 -> takeover(e) }
		atomic {
			if
			:: status != STARTED -> goto done  /* the claim parked it (PARK_IN_TAKEOVER) */
			:: status == STARTED && attempts > MAXATT -> goto exhausted
			:: else -> skip
			fi;
#ifdef BUG_RESUMER_LATE
			/* measures its lease from its own start, not from before its claim */
			dl[e] = L - M;
#endif
			/* starts at once (a pause here is a zombie's): its deadline is counted from before
			 * the claim, so past it the call is not sent (send:, dl[e] == 0) */
			enter(e)
		}
		steps(e);
crashed:
stop:
done:
		forget(e)
	od
}

#ifdef GC
/*
 * Another request under the key (another operation, or another request body): it comes once the
 * GC deletes the key (before that, the key answers it 422 and it writes nothing, which is not a
 * step). Its claim's statement takes its snapshot and waits for a GC deleting the key as the
 * retry's does; when the key is gone, its row goes in and the probe sees the key or its
 * tombstone in that snapshot: 422, nothing stored.
 */
proctype other() {
	bit osnapped, osnapkey, osnaptomb;

end_other:
	do
	:: atomic { !osnapped && claimed && (status == COMPLETED || status == NONE) ->
		/* its claim statement takes its snapshot: the key as readers see it, and its tombstone */
		osnapped = 1; osnapkey = (status != NONE); osnaptomb = tomb }
	:: atomic { osnapped && status == NONE ->
		/* the key is gone (any GC it waited for committed): the row goes in; the probe */
		if
		:: PROBE(osnapkey, osnaptomb) ->
#ifdef BUG_TOMB_NO_DIGEST
			/* 410 whenever the key has a tombstone, whatever the request */
			other410 = 1;
#else
			/* PGS02: the tombstone's operation or request digest differs: 422 */
			SEEN(W_OTHER_422);
#endif
			/* PROPERTY a 410 answers only the request whose key expired */
			assert(other410 == 0)
		:: else ->
			/* the probe saw neither: another request claims the key */
			othersclaim++;
			/* PROPERTY no other request claims the key while its tombstone lives */
			assert(othersclaim == 0)
		fi;
		break }
	od
}

/* the key's row deleted, with its call journal and history (the business writes stay) */
inline delete_key() {
	status = NONE; rp = 0; tok = NOTOK; lease = 0; next = 0; attempts = 0; execs = 0;
	parked = PK_NONE; decided = D_NONE; ref = 0;
	rreach[0] = 0; rreach[1] = 0; rreach[2] = 0; rreach[3] = 0;
	rq[0] = 0; rq[1] = 0; rq[2] = 0; rq[3] = 0;
	hreach = 0; hq = 0; pendrec = 0; pendings = 0
#ifdef WINDOW_SHRINK
	; rw[0] = 0; rw[1] = 0; rw[2] = 0; rw[3] = 0; hq2 = 0;
	rdone[0] = 0; rdone[1] = 0; rdone[2] = 0; rdone[3] = 0
#endif
}

/*
 * Retention GC: a batch deletes the completed key (never a started or parked one) and writes its
 * tombstone in one statement, one transaction, at any moment after the key completed (the model
 * lets its retention be as short as it likes). Until the batch commits, readers see the key, and
 * a claim's INSERT waits on the key's unique entry. A GC that dies before its commit leaves
 * nothing, as if it never ran (not modelled: a claim that waited on it conflicts with the key and
 * gets the replay). BUG_GC_NO_TOMBSTONE deletes without a tombstone; BUG_GC_SPLIT writes it in a
 * transaction of its own, after the delete; GC_TOMB_FIRST in one of its own before the delete;
 * TOMB_EXPIRES lets the tombstone's window pass.
 */
#if defined(BUG_GC_SPLIT)
#define TOMB_WITH_DELETE tombdue = 1
#elif defined(BUG_GC_NO_TOMBSTONE) || defined(GC_TOMB_FIRST)
#define TOMB_WITH_DELETE skip
#else
#define TOMB_WITH_DELETE tomb = 1
#endif

active proctype gc() {
end_idle:
	do
#ifdef GC_TOMB_FIRST
	:: atomic { status == COMPLETED && !tomb -> tomb = 1 }
	:: atomic { status == COMPLETED && tomb && !gcopen -> gcopen = 1 }
#else
	:: atomic { status == COMPLETED && !gcopen -> gcopen = 1 }
#endif
	:: atomic { gcopen -> delete_key(); gcopen = 0; TOMB_WITH_DELETE }
#ifdef BUG_GC_SPLIT
	:: atomic { tombdue -> tombdue = 0; tomb = 1 }
#endif
#ifdef TOMB_EXPIRES
	:: atomic { tomb -> tomb = 0 }
#endif
	od
}
#endif

/* The operator: resumes a parked key with a fresh budget, or settles it. An operator acts long
 * after the key parked: every lease, deadline and in-flight window of the runs before has run
 * out (unless OP_ANYTIME). Executions of those runs may still be paused anywhere. */
#ifdef OP_ANYTIME
#define QUIESCENT true
#else
#define QUIESCENT (!flon[0] && !flon[1] && !flon[2] && hq == 0 && rq[0] == 0 && rq[1] == 0 && \
	rq[2] == 0 && rq[3] == 0 && dl[0] == 0 && dl[1] == 0 && dl[2] == 0 && next == 0)
#endif

proctype operator() {
	LOCALS;
	byte e = EO;
	byte resumes;

end_idle:
	do
	:: atomic { status == FAILED && resumes < OPRESUMES && QUIESCENT ->
		resumes++;
		status = STARTED; parked = PK_NONE; next = 0;
		attempts = MAXATT - OPBUDGET; execs = attempts;
		takeover(e);
		enter(e)
	   }
		steps(e);
crashed:
stop:
done:
		forget(e)
	:: atomic { status == FAILED ->
		/* settle: the hook and the completion in one transaction, only on a parked key */
		assert(settled == 0);
		SEEN(W_SETTLED);
		settled++;
		status = COMPLETED; parked = PK_NONE
	   }
	od
}

/* the clock ticks while anything counts down; a request whose in-flight time is over must have
 * landed (or been lost) first */
#define RUNNING(i) (flon[i] && flrem[i] > 0)
#define OVERDUE(i) (flon[i] && flrem[i] == 0)
#define DEC(x) if :: x > 0 -> x-- :: else -> skip fi

active proctype clock() {
end_tick:
	do
	:: atomic {
		!OVERDUE(0) && !OVERDUE(1) && !OVERDUE(2) &&
		(lease > 0 ||
#ifdef BUG_NOW_LEASE
		 inphase[EA] ||
#endif
 next > 0 || dl[0] > 0 || dl[1] > 0 || dl[2] > 0 || dl[3] > 0 ||
		 rq[0] > 0 || rq[1] > 0 || rq[2] > 0 || rq[3] > 0 || hq > 0 ||
		 oq[0] > 0 || oq[1] > 0 || oq[2] > 0 || oq[3] > 0 ||
#ifdef WINDOW_SHRINK
		 hq2 > 0 ||
#endif
#ifdef LOST_ANYTIME
		 s_lease > 0 || s_next > 0 || s_rq[0] > 0 || s_rq[1] > 0 || s_rq[2] > 0 || s_rq[3] > 0 || s_hq > 0 ||
#endif
		 RUNNING(0) || RUNNING(1) || RUNNING(2)) ->
		DEC(lease); DEC(next);
		DEC(dl[0]); DEC(dl[1]); DEC(dl[2]); DEC(dl[3]);
		DEC(rq[0]); DEC(rq[1]); DEC(rq[2]); DEC(rq[3]); DEC(hq);
		DEC(oq[0]); DEC(oq[1]); DEC(oq[2]); DEC(oq[3]);
		DEC(flrem[0]); DEC(flrem[1]); DEC(flrem[2]);
#ifdef WINDOW_SHRINK
		DEC(hq2);
#endif
#ifdef LOST_ANYTIME
		DEC(s_lease); DEC(s_next); DEC(s_rq[0]); DEC(s_rq[1]); DEC(s_rq[2]); DEC(s_rq[3]); DEC(s_hq);
#endif
#ifdef BUG_NOW_LEASE
		if :: inphase[EA] && sb[EA] < L -> sb[EA]++ :: else -> skip fi
#endif
	   }
	od
}

#ifdef WINDOW_SHRINK
#define CLEAR_BIG(i) flbig[i] = 0
#else
#define CLEAR_BIG(i) skip
#endif

/* a request lands, and charges (no idempotency keys); with KEYS, a request whose key (its
 * reference) has a charge already is answered with that charge */
inline land(i) {
#ifdef KEYS
	if
	:: ncharges > 0 && chgref == flref[i] -> SEEN(W_KEY_ANSWERED)
	:: else ->
#endif
	/* PROPERTY never a second charge, for the intent: a second charge under any reference */
	assert(ncharges == 0);
	ncharges++;
	if
	:: chg = C_SUCC
	:: chg = C_DECL
	:: chg = C_PEND
	fi;
	chgref = flref[i];
#ifdef KEYS
	fi;
#endif
	if :: flto[i] > 0 -> resp[flto[i] - 1] = chg :: else -> SEEN(W_LATE_LANDING) fi;
	if :: flfrom[i] != tok -> SEEN(W_ZOMBIE_SENT) :: else -> skip fi;
#ifdef WINDOW_SHRINK
	if :: flbig[i] && win == WSMALL -> SEEN(W_SHRUNK_LANDED) :: else -> skip fi;
#endif
	flon[i] = 0; flto[i] = 0; flrem[i] = 0; flfrom[i] = 0; flref[i] = 0; CLEAR_BIG(i)
}

/* a request is lost on the way */
inline lose(i) {
	flon[i] = 0; flto[i] = 0; flrem[i] = 0; flfrom[i] = 0; flref[i] = 0; CLEAR_BIG(i)
}

active proctype provider() {
end_serve:
	do
	:: atomic { flon[0] -> land(0) }
	:: atomic { flon[1] -> land(1) }
	:: atomic { flon[2] -> land(2) }
	:: atomic { flon[0] -> lose(0) }
	:: atomic { flon[1] -> lose(1) }
	:: atomic { flon[2] -> lose(2) }
	:: atomic { chg == C_PEND -> if :: chg = C_SUCC :: chg = C_DECL fi }
#ifdef WINDOW_SHRINK
	/* the declared in-flight window drops (once); requests already sent keep theirs */
	:: atomic { win > WSMALL -> win = WSMALL }
#endif
	od
}

/* PROPERTY every intent ends completed or parked: when nothing can move, the key is not started */
active proctype endcheck() {
#ifdef LOST_COMMITS
	byte orphans;
#endif
	timeout -> assert(status != STARTED);
#ifdef LOST_COMMITS
	/* PROPERTY a client without its answer retries until the key exists again: no key at the
	 * end only when the client got its answer before a failover lost it */
	assert(status != NONE || answered);
	/* reconciliation (the provider's charges against the completed keys here) reports the
	 * charges whose intent has no completed key: a parked key's, which an operator settles, or
	 * one whose key a failover lost after its client had the answer */
	orphans = (status != COMPLETED -> ncharges : 0);
	/* PROPERTY every charge belongs to an intent completed here or reported by reconciliation,
	 * and there is at most one for the intent */
	assert(ncharges <= 1 && (orphans == 0 || status == FAILED || (status == NONE && answered)));
	if :: orphans > 0 && status == NONE -> SEEN(W_RECONCILED) :: else -> skip fi
#endif
}

#ifdef LOST_COMMITS
/*
 * The database fails over to a standby that lacks the primary's last commits (asynchronous
 * replication). The standby replays the primary's commits up to some point (replicate: at any
 * moment it may catch up); a failover brings back the key as of that point, or no key at all,
 * at most MAXLOSS times. Every execution in flight loses its connection: its open transaction
 * is gone (a step is its commit: it either committed before, or runs against the standby), and
 * it may go on later with its old token (a zombie). The provider and the clients forget nothing.
 *
 * Without LOST_ANYTIME, the standby takes writes only once every lease the old primary granted
 * has run out and every request sent has landed or been lost (the new primary takes keys over
 * only a lease plus the in-flight window after the old primary's last commit): the key comes
 * back with its lease, schedule and quiet times run out. With LOST_ANYTIME the failover may
 * happen at any moment, the standby's timers running on as the primary's do; with LOST_QUIET at
 * any moment at which no execution may still send and no request may still land, the standby's
 * timers running on.
 */
#ifdef LOST_QUIET
#define FO_READY (!flon[0] && !flon[1] && !flon[2] && dl[0] == 0 && dl[1] == 0 && dl[2] == 0 && \
	dl[3] == 0 && oq[0] == 0 && oq[1] == 0 && oq[2] == 0 && oq[3] == 0)
#define SNAPTIMERS_DIFF (s_lease != lease || s_next != next || s_hq != hq || \
	s_rq[0] != rq[0] || s_rq[1] != rq[1] || s_rq[2] != rq[2] || s_rq[3] != rq[3])
#elif defined(LOST_ANYTIME)
#define FO_READY true
#define SNAPTIMERS_DIFF (s_lease != lease || s_next != next || s_hq != hq || \
	s_rq[0] != rq[0] || s_rq[1] != rq[1] || s_rq[2] != rq[2] || s_rq[3] != rq[3])
#else
#define FO_READY (!flon[0] && !flon[1] && !flon[2] && lease == 0 && next == 0 && hq == 0 && \
	rq[0] == 0 && rq[1] == 0 && rq[2] == 0 && rq[3] == 0 && dl[0] == 0 && dl[1] == 0 && \
	dl[2] == 0 && dl[3] == 0 && oq[0] == 0 && oq[1] == 0 && oq[2] == 0 && oq[3] == 0)
#define SNAPTIMERS_DIFF false
#endif

/* the standby lacks some of the primary's commits */
#define BEHIND (s_status != status || s_rp != rp || s_tok != tok || s_attempts != attempts || \
	s_parked != parked || s_decided != decided || s_pendings != pendings || s_ref != ref || \
	s_rreach[0] != rreach[0] || s_rreach[1] != rreach[1] || s_rreach[2] != rreach[2] || \
	s_rreach[3] != rreach[3] || s_hreach != hreach || s_pendrec != pendrec || s_w1 != w1 || \
	s_w2 != w2 || s_u1 != u1 || s_settled != settled || s_execs != execs || SNAPTIMERS_DIFF)

#define COPY4(to, from) to[0] = from[0]; to[1] = from[1]; to[2] = from[2]; to[3] = from[3]

active proctype failover() {
end_standby:
	do
	:: atomic { claimed && losses < MAXLOSS && BEHIND ->
		/* the standby replays the primary's commits so far */
		s_status = status; s_rp = rp; s_tok = tok; s_attempts = attempts; s_parked = parked;
		s_decided = decided; s_pendings = pendings; s_ref = ref;
		COPY4(s_rreach, rreach); s_hreach = hreach; s_pendrec = pendrec;
		s_w1 = w1; s_w2 = w2; s_u1 = u1; s_settled = settled; s_execs = execs;
#ifdef LOST_ANYTIME
		s_lease = lease; s_next = next; COPY4(s_rq, rq); s_hq = hq;
#endif
	   }
	:: atomic { claimed && losses < MAXLOSS && BEHIND && FO_READY ->
		/* failover: the standby's key, without the commits it lacked */
		losses++;
		status = s_status; rp = s_rp; tok = s_tok; attempts = s_attempts; parked = s_parked;
		decided = s_decided; pendings = s_pendings; ref = s_ref;
		COPY4(rreach, s_rreach); hreach = s_hreach; pendrec = s_pendrec;
		w1 = s_w1; w2 = s_w2; u1 = s_u1; settled = s_settled; execs = s_execs;
#ifdef LOST_ANYTIME
		lease = s_lease; next = s_next; COPY4(rq, s_rq); hq = s_hq;
		/* an execution that may still send holds a lease the database may no longer know */
		lostlease[0] = (dl[0] > 0); lostlease[1] = (dl[1] > 0);
		lostlease[2] = (dl[2] > 0); lostlease[3] = (dl[3] > 0);
#else
		lease = 0; next = 0; rq[0] = 0; rq[1] = 0; rq[2] = 0; rq[3] = 0; hq = 0;
#endif
		if :: status == NONE -> lostkey = 1 :: else -> skip fi;
		chgold = (ncharges > 0);
		prefo[0] = 1; prefo[1] = 1; prefo[2] = 1; prefo[3] = 1;
		if
		:: losses == MAXLOSS ->
			/* no more failovers: forget the standby (fewer states) */
			s_status = 0; s_rp = 0; s_tok = NOTOK; s_attempts = 0; s_parked = 0; s_decided = 0;
			s_pendings = 0; s_ref = 0; s_hreach = 0; s_pendrec = 0;
			s_rreach[0] = 0; s_rreach[1] = 0; s_rreach[2] = 0; s_rreach[3] = 0;
			s_w1 = 0; s_w2 = 0; s_u1 = 0; s_settled = 0; s_execs = 0;
#ifdef LOST_ANYTIME
			s_lease = 0; s_next = 0; s_hq = 0; s_rq[0] = 0; s_rq[1] = 0; s_rq[2] = 0; s_rq[3] = 0;
#endif
			skip
		:: else -> skip
		fi
	   }
	od
}
#endif

init {
	atomic {
		run first();
#ifndef NO_B
		run duplicate();
#endif
		run resumer();
#ifndef NO_OP
		run operator();
#endif
#if defined(GC) && !defined(NO_OTHER)
		run other();
#endif
		skip
	}
}

#ifdef LIVENESS
/* PROPERTY every intent ends completed or parked, under weak fairness */
ltl terminates { <>[] (status != STARTED) }
#endif
