package saga

import (
	"github.com/jackc/pgx/v5/pgtype"
)

// args are a key write's arguments, kept where sending them allocates nothing: pgx encodes a
// pointer to a pgtype value through its Valuer interface, while a string, a byte slice or an
// integer beyond 255 put in an interface costs an allocation each (a dozen per write). One args
// serves an execution's writes one after the other: a write's arguments are read when it is
// sent, before the next write is built.
type args struct {
	list  [24]any
	n     int
	texts [14]pgtype.Text
	nt    int
	ints  [8]pgtype.Int8
	ni    int
	bytes [4]byteaArg
	nb    int
	// stmt is the write being built.
	stmt keyStatement
}

// byteaArg is a bytea argument: a pointer to it is a pgtype.BytesValuer.
type byteaArg []byte

func (b *byteaArg) BytesValue() ([]byte, error) { return *b, nil }

// reset starts a new write, and returns its statement.
func (a *args) reset() *keyStatement {
	a.n, a.nt, a.ni, a.nb = 0, 0, 0, 0
	a.stmt = keyStatement{}
	return &a.stmt
}

func (a *args) add(v any) {
	a.list[a.n] = v
	a.n++
}

// text adds s; textOrNull adds NULL for "".
func (a *args) text(s string) { a.textValid(s, true) }

func (a *args) textOrNull(s string) { a.textValid(s, s != "") }

func (a *args) textValid(s string, valid bool) {
	t := &a.texts[a.nt]
	a.nt++
	*t = pgtype.Text{String: s, Valid: valid}
	a.add(t)
}

func (a *args) int(v int64) {
	i := &a.ints[a.ni]
	a.ni++
	*i = pgtype.Int8{Int64: v, Valid: true}
	a.add(i)
}

// bytea adds b, NULL when nil.
func (a *args) bytea(b []byte) {
	p := &a.bytes[a.nb]
	a.nb++
	*p = b
	a.add(p)
}

// slice is the arguments added since reset.
func (a *args) slice() []any { return a.list[:a.n] }
