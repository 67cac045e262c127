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
 * (a zombie): the clock runs while it does not.
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

/* ---- each execution's own view ---- */
byte dl[4];            /* ticks until its local deadline: it never sends once this is 0 */
bit incall[4];         /* inside its call: journal row committed, call not ended */
byte resp[4];          /* the provider's answer to the request it waits for (C_*) */
byte oq[4];            /* ticks until its own unanswered send can no longer land */
#ifdef BUG_NOW_LEASE
byte sb[4];            /* ticks since its open transaction began (now()) */
bit inphase[4];
#endif

/* ---- the provider: inquiry, no idempotency keys (every request that lands charges) ---- */
bit flon[NFL];         /* in flight */
byte flrem[NFL];       /* ticks before it must have landed or been lost */
byte flto[NFL];        /* 1 + the slot of the execution waiting for its answer, 0: nobody */
byte flfrom[NFL];      /* (ghost) the slot of the execution that sent it */
byte chg = C_NONE;
byte ncharges;

/* ---- ghosts: what the properties count ---- */
byte w1, w2, u1, settled;
byte crashes;
byte execs;            /* executions started under the current attempt budget */

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

/* a fenced write found the lease taken over: the execution stops */
#define FENCED_OUT SEEN(W_FENCED); goto stop

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

/* e is inside its sending window: its row is committed, its call not over, its deadline ahead */
#define WINDOW(k) (incall[k] && dl[k] > 0)

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

/* a row other than this attempt's (slot k's latest) that may have reached the provider */
#define MAYREACH(k) (rreach[k] && (k != e || !hasrow))
#define ANYREACH (hreach || MAYREACH(0) || MAYREACH(1) || MAYREACH(2) || MAYREACH(3))
/* ... every such row quiet (rq: README.md, "Assumptions"), and this execution's own unanswered
 * send too (an in-process round) */
#define QUIET(k) (!MAYREACH(k) || rq[k] == 0)
#define ALLQUIET ((!hreach || hq == 0) && QUIET(0) && QUIET(1) && QUIET(2) && QUIET(3) && oq[e] == 0)

/* the journal row for C, in the statement that writes the lease it runs under; it reads the
 * earlier rows back (need: one of them may have reached the provider) */
inline add_row(e) {
	if
	:: rreach[e] -> hreach = 1; if :: rq[e] > hq -> hq = rq[e] :: else -> skip fi
	:: else -> skip
	fi;
	rreach[e] = 1;         /* outcome none: in flight */
	rq[e] = lease + INFLIGHT;
	hasrow = 1;
	need = ANYREACH
}

/* the call's outcome rides in the execution's next key write (ended_at): a row certainly not
 * done may not have reached the provider; any other row is quiet once its ended_at plus the
 * in-flight time has passed (its execution sent nothing after its call ended), or its deadline
 * plus the in-flight time if that is sooner (the code takes ended_at even when it is later:
 * waiting longer is never less safe, so the model checks the sooner of the two) */
inline record(res) {
	if
	:: hasrow && res == O_FB -> rreach[e] = 0; rq[e] = 0
	:: hasrow && res != O_FB ->
#ifndef DEADLINE_ONLY
		if :: rq[e] > ENDED_QUIET -> rq[e] = ENDED_QUIET :: else -> skip fi;
#endif
		if :: res == O_PEND -> pendrec = 1 :: else -> skip fi
	:: else -> skip
	fi
}

/* PROPERTY attempt budget: no more than MAXATT executions start under one budget, so a key
 * whose executions always crash parks (a takeover past the budget parks and runs nothing) */
#define BUDGET_OK (attempts > MAXATT || execs <= MAXATT)

/* a takeover statement (conditional UPDATE): new token, lease from the statement's own time,
 * attempt counted; it returns the recovery point and the decided outcome. At a recovery point
 * right before the call, the same statement journals the call's row, the new lease's end as its
 * deadline, unless the execution will park at once (its budget spent: a takeover past the budget
 * journals nothing, and the operator's fresh budget never is). With RENEW_ON_RESUME it journals
 * nothing and the execution renews the lease with the row in a write of its own (renew:), as the
 * code does when the takeover journaled no row (README.md, "The protocol"). */
inline takeover(e) {
	tok = e;
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
			:: chg == C_SUCC -> SEEN(W_FOUND); res = O_SUCC; leave_call(e); goto got
			:: chg == C_DECL -> SEEN(W_FOUND); res = O_DECL; leave_call(e); goto got
#ifndef BUG_PENDING_RESEND
			:: chg == C_PEND -> res = O_PEND; leave_call(e); goto pending
#else
			:: chg == C_PEND -> skip
#endif
			:: chg == C_NONE -> skip     /* empty */
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
			assert(tok == e && lease > 0 && status == STARTED);
			if :: need -> SEEN(W_RESEND) :: else -> skip fi;
			if :: inproc -> SEEN(W_INPROC_RESEND) :: else -> skip fi;
			if
			:: !flon[0] -> slot = 0
			:: else -> if
				:: !flon[1] -> slot = 1
				:: else -> assert(!flon[2]); slot = 2
				fi
			fi;
			flon[slot] = 1; flrem[slot] = INFLIGHT; flto[slot] = e + 1; flfrom[slot] = e;
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
			oq[e] = ENDED_QUIET;
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
			/* PROPERTY W2 at most once */
			assert(w2 == 0);
			w2++;
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
		/* PROPERTY W1 at most once */
		assert(status == NONE && w1 == 0);
		w1++;
		status = STARTED; rp = RP_P1; tok = e; attempts = 1; next = 0;
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
 */
proctype duplicate() {
	LOCALS;
	byte e = EB;
	byte tries = TRIES_B;

end_decide:
	do
	:: atomic { tries > 0 && status == STARTED && lease == 0 && next == 0 ->
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
	:: tries == 0 -> break
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
		 RUNNING(0) || RUNNING(1) || RUNNING(2)) ->
		DEC(lease); DEC(next);
		DEC(dl[0]); DEC(dl[1]); DEC(dl[2]); DEC(dl[3]);
		DEC(rq[0]); DEC(rq[1]); DEC(rq[2]); DEC(rq[3]); DEC(hq);
		DEC(oq[0]); DEC(oq[1]); DEC(oq[2]); DEC(oq[3]);
		DEC(flrem[0]); DEC(flrem[1]); DEC(flrem[2]);
#ifdef BUG_NOW_LEASE
		if :: inphase[EA] && sb[EA] < L -> sb[EA]++ :: else -> skip fi
#endif
	   }
	od
}

/* a request lands, and charges (no idempotency keys) */
inline land(i) {
	/* PROPERTY never a second charge */
	assert(ncharges == 0);
	ncharges++;
	if
	:: chg = C_SUCC
	:: chg = C_DECL
	:: chg = C_PEND
	fi;
	if :: flto[i] > 0 -> resp[flto[i] - 1] = chg :: else -> SEEN(W_LATE_LANDING) fi;
	if :: flfrom[i] != tok -> SEEN(W_ZOMBIE_SENT) :: else -> skip fi;
	flon[i] = 0; flto[i] = 0; flrem[i] = 0; flfrom[i] = 0
}

/* a request is lost on the way */
inline lose(i) {
	flon[i] = 0; flto[i] = 0; flrem[i] = 0; flfrom[i] = 0
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
	od
}

/* PROPERTY every intent ends completed or parked: when nothing can move, the key is not started */
active proctype endcheck() {
	timeout -> assert(status != STARTED)
}

init {
	atomic {
		run first();
#ifndef NO_B
		run duplicate();
#endif
		run resumer();
		run operator()
	}
}

#ifdef LIVENESS
/* PROPERTY every intent ends completed or parked, under weak fairness */
ltl terminates { <>[] (status != STARTED) }
#endif
