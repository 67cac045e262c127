package migrations

// ErrNoSession is Migrate's refusal of a transaction pooler, for the external tests.
var ErrNoSession = errNoSession

// The embedded line and its loader, for the external tests.
var (
	PgSaga = pgsagaLine
	Load   = load
)
