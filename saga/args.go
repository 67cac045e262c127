package saga

import (
	"sync"

	"github.com/jackc/pgx/v5/pgtype"
)

// args are a key write's arguments, kept where sending them allocates nothing: pgx encodes a
// pointer to a pgtype value through its Valuer interface, while a string, a byte slice or an
// integer beyond 255 put in an interface costs an allocation each (a dozen per write). One args
// serves one write at a time, from argsPool: a write's arguments are read when it is sent.
type args struct {
	list  [24]any
	n     int
	texts [14]pgtype.Text
	nt    int
	ints  [8]pgtype.Int8
	ni    int
	bytes [6]byteaArg
	nb    int
	// stmt is the write being built.
	stmt keyStatement
}

// argsPool keeps args between writes: a kilobyte each, the largest thing a request would
// otherwise allocate. A write takes one (getArgs) and gives it back once its statement has been
// sent and read (putArgs).
var argsPool = sync.Pool{New: func() any { return new(args) }}

func getArgs() *args { return argsPool.Get().(*args) }

// putArgs gives a back, holding no argument: what they point to can be collected.
func putArgs(a *args) {
	clear(a.list[:a.n])
	for i := range a.texts[:a.nt] {
		a.texts[i] = pgtype.Text{}
	}
	for i := range a.bytes[:a.nb] {
		a.bytes[i] = nil
	}
	a.stmt = keyStatement{}
	argsPool.Put(a)
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

// json adds b, encoded JSON, as a jsonb argument (pgx encodes a named byte slice as its bytes).
func (a *args) json(b []byte) { a.bytea(b) }

// slice is the arguments added since reset.
func (a *args) slice() []any { return a.list[:a.n] }
