package keystore

// The request path's statements: a key's read, its claims and the fenced writes of the
// execution that holds it. Each is bound into a Statement (statement.go), which sends it without
// allocating, rather than run by its generated method, which boxes every parameter and scan
// target (doc.go has the figures).

// BindReadHead binds ReadHead (read.sql).
func BindReadHead(p *ReadHeadParams) *Statement { return bind(readHead, p) }

// BindClaimCompleted binds ClaimCompleted (claim.sql).
func BindClaimCompleted(p *ClaimCompletedParams) *Statement { return bind(claimCompleted, p) }

// BindClaimCompletedOrNothing binds ClaimCompletedOrNothing (claim.sql).
func BindClaimCompletedOrNothing(p *ClaimCompletedOrNothingParams) *Statement {
	return bind(claimCompletedOrNothing, p)
}

// BindClaimStarted binds ClaimStarted (claim.sql).
func BindClaimStarted(p *ClaimStartedParams) *Statement { return bind(claimStarted, p) }

// BindClaimStartedJournal binds ClaimStartedJournal (claim.sql).
func BindClaimStartedJournal(p *ClaimStartedJournalParams) *Statement {
	return bind(claimStartedJournal, p)
}

// BindClaimStartedJournalOrNothing binds ClaimStartedJournalOrNothing (claim.sql).
func BindClaimStartedJournalOrNothing(p *ClaimStartedJournalOrNothingParams) *Statement {
	return bind(claimStartedJournalOrNothing, p)
}

// BindClaimParkedOrNothing binds ClaimParkedOrNothing (claim.sql).
func BindClaimParkedOrNothing(p *ClaimParkedOrNothingParams) *Statement {
	return bind(claimParkedOrNothing, p)
}

// BindAdvance binds Advance (advance.sql).
func BindAdvance(p *AdvanceParams) *Statement { return bind(advance, p) }

// BindAdvanceCallInRow binds AdvanceCallInRow (advance.sql).
func BindAdvanceCallInRow(p *AdvanceCallInRowParams) *Statement { return bind(advanceCallInRow, p) }

// BindComplete binds Complete (complete.sql).
func BindComplete(p *CompleteParams) *Statement { return bind(complete, p) }

// BindCompleteCallInRow binds CompleteCallInRow (complete.sql).
func BindCompleteCallInRow(p *CompleteCallInRowParams) *Statement { return bind(completeCallInRow, p) }

// BindCompleteCallInRowAlone binds CompleteCallInRowAlone (complete.sql).
func BindCompleteCallInRowAlone(p *CompleteCallInRowAloneParams) *Statement {
	return bind(completeCallInRowAlone, p)
}

// BindRelease binds Release (release.sql).
func BindRelease(p *ReleaseParams) *Statement { return bind(release, p) }

// BindReleaseCallInRow binds ReleaseCallInRow (release.sql).
func BindReleaseCallInRow(p *ReleaseCallInRowParams) *Statement { return bind(releaseCallInRow, p) }

// BindPark binds Park (park.sql).
func BindPark(p *ParkParams) *Statement { return bind(park, p) }

// BindParkCallInRow binds ParkCallInRow (park.sql).
func BindParkCallInRow(p *ParkCallInRowParams) *Statement { return bind(parkCallInRow, p) }
