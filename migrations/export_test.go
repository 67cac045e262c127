package migrations

// The embedded line and its loader, for the external tests.
var (
	PgSaga = pgsagaLine
	Load   = load
)
