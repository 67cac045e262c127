package keystore

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// Querier is what a statement sent alone needs: a pool, a connection or a transaction.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Statement is one of the request path's statements with its parameters bound, ready to send
// alone (Exec, QueryRow) or queued before a phase's COMMIT (SQL and Args). Its arguments are
// held where sending them allocates nothing: pgx encodes a pointer to a pgtype value through
// its Valuer interface, while a string, a byte slice or an integer beyond 255 put in an
// interface costs an allocation each. Release gives the statement back once its result has been
// read.
//
// The parameters are bound in the order of the fields of the statement's generated Params
// struct, which is the order of its numbered parameters (statement_test.go checks every request
// path statement against its generated method).
type Statement struct {
	SQL  string
	Args []any

	list  [32]any
	dest  [32]any
	texts [16]pgtype.Text
	ints  [16]pgtype.Int8
	bytes [8]bytea
	uuids [2]pgtype.UUID
	nt    int
	ni    int
	nb    int
	nu    int
}

var statements = sync.Pool{New: func() any { return new(Statement) }}

// bind returns sql with the fields of params (a pointer to its generated Params struct) bound.
// Every value is copied out of params, which bind keeps no pointer to, so that params may live
// on the caller's stack.
func bind(sql string, params any) *Statement {
	s := statements.Get().(*Statement)
	s.SQL = sql
	v := reflect.ValueOf(params).Elem()
	n := v.NumField()
	for i := range n {
		s.list[i] = s.arg(v.Field(i))
	}
	s.Args = s.list[:n]
	return s
}

var (
	textType        = reflect.TypeFor[pgtype.Text]()
	int8Type        = reflect.TypeFor[pgtype.Int8]()
	uuidType        = reflect.TypeFor[pgtype.UUID]()
	byteSliceType   = reflect.TypeFor[[]byte]()
	stringSliceType = reflect.TypeFor[[]string]()
)

// arg is f as an argument: a pointer to a pooled pgtype value, copied from f so that nothing
// of the caller's parameters is kept.
func (s *Statement) arg(f reflect.Value) any {
	switch t := f.Type(); {
	case t.Kind() == reflect.String:
		return s.text(pgtype.Text{String: f.String(), Valid: true})
	case t.Kind() == reflect.Int32 || t.Kind() == reflect.Int64:
		return s.int8(pgtype.Int8{Int64: f.Int(), Valid: true})
	case t.Kind() == reflect.Bool:
		return f.Bool() // a bool in an interface allocates nothing
	case t == byteSliceType:
		b := &s.bytes[s.nb]
		s.nb++
		*b = *(*[]byte)(f.Addr().UnsafePointer()) // f.Bytes() would make params escape
		return b
	case t == stringSliceType:
		// One allocation; no statement of a first execution takes a list.
		return any(*(*[]string)(f.Addr().UnsafePointer()))
	case t == textType:
		return s.text(*(*pgtype.Text)(f.Addr().UnsafePointer()))
	case t == int8Type:
		return s.int8(*(*pgtype.Int8)(f.Addr().UnsafePointer()))
	case t == uuidType:
		u := &s.uuids[s.nu]
		s.nu++
		*u = *(*pgtype.UUID)(f.Addr().UnsafePointer())
		return u
	}
	panic(fmt.Sprintf("keystore: no binding for a parameter of type %s", f.Type()))
}

func (s *Statement) text(t pgtype.Text) *pgtype.Text {
	p := &s.texts[s.nt]
	s.nt++
	*p = t
	return p
}

func (s *Statement) int8(i pgtype.Int8) *pgtype.Int8 {
	p := &s.ints[s.ni]
	s.ni++
	*p = i
	return p
}

// bytea is a bytea or jsonb argument (nil is NULL): a pointer to it is a pgtype.BytesValuer.
type bytea []byte

func (b *bytea) BytesValue() ([]byte, error) { return *b, nil }

// Release gives s back, holding no argument: what they point to can be collected.
func (s *Statement) Release() {
	clear(s.list[:])
	clear(s.dest[:])
	clear(s.texts[:s.nt])
	clear(s.bytes[:s.nb])
	s.SQL, s.Args, s.nt, s.ni, s.nb, s.nu = "", nil, 0, 0, 0, 0
	statements.Put(s)
}

// Exec sends s alone and returns how many rows it wrote.
func (s *Statement) Exec(ctx context.Context, db Querier) (int64, error) {
	tag, err := db.Exec(ctx, s.SQL, s.Args...)
	return tag.RowsAffected(), err
}

// QueryRow sends s alone and scans its row into row (Scan).
func (s *Statement) QueryRow(ctx context.Context, db Querier, row any) error {
	return s.Scan(db.QueryRow(ctx, s.SQL, s.Args...), row)
}

// Scan scans r, a row of s, into row: a pointer to the statement's generated Row struct. A
// column the Row struct declares interface{} (a fence) is read and dropped.
func (s *Statement) Scan(r pgx.Row, row any) error {
	v := reflect.ValueOf(row).Elem()
	n := v.NumField()
	for i := range n {
		if f := v.Field(i); f.Kind() != reflect.Interface {
			s.dest[i] = f.Addr().Interface()
		}
	}
	return r.Scan(s.dest[:n]...)
}

// Discard reads r, a row of s with the given number of columns, and keeps nothing of it: for
// the fenced writes, whose row says only that they wrote.
func (s *Statement) Discard(r pgx.Row, columns int) error {
	return r.Scan(s.dest[:columns]...)
}
