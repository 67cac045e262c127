package keystore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"
)

// recorder is a DBTX that records what a statement sends and answers nothing.
type recorder struct {
	sql  string
	args []any
}

var errRecorded = errors.New("recorded")

func (r *recorder) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	r.sql, r.args = sql, args
	return pgconn.CommandTag{}, errRecorded
}

func (r *recorder) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	r.sql, r.args = sql, args
	return nil, errRecorded
}

func (r *recorder) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	r.sql, r.args = sql, args
	return failedRow{}
}

type failedRow struct{}

func (failedRow) Scan(...any) error { return errRecorded }

// fill gives every field of params a value no other field has, NULL-able fields a valid one.
func fill(t *testing.T, params any) {
	v := reflect.ValueOf(params).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		s := fmt.Sprintf("field-%d", i)
		switch x := f.Addr().Interface().(type) {
		case *string:
			*x = s
		case *int32:
			*x = int32(1000 + i)
		case *int64:
			*x = int64(1000 + i)
		case *bool:
			*x = i%2 == 0
		case *[]byte:
			*x = []byte(s)
		case *[]string:
			*x = []string{s}
		case *pgtype.Text:
			*x = pgtype.Text{String: s, Valid: true}
		case *pgtype.Int8:
			*x = pgtype.Int8{Int64: int64(1000 + i), Valid: true}
		case *pgtype.UUID:
			*x = pgtype.UUID{Bytes: [16]byte{byte(i)}, Valid: true}
		default:
			t.Fatalf("no value for a field of type %T", x)
		}
	}
}

// plain is an argument as the value it sends, whether boxed or behind a pooled pgtype pointer.
func plain(a any) any {
	switch x := a.(type) {
	case *pgtype.Text:
		return x.String
	case pgtype.Text:
		return x.String
	case *pgtype.Int8:
		return x.Int64
	case pgtype.Int8:
		return x.Int64
	case int32:
		return int64(x)
	case *bytea:
		return []byte(*x)
	case *pgtype.UUID:
		return *x
	}
	return a
}

// TestBindingsSendWhatTheGeneratedMethodsSend: each request path statement, bound by the
// pooled binder, sends the SQL and the arguments, in order, that its generated method sends.
func TestBindingsSendWhatTheGeneratedMethodsSend(t *testing.T) {
	for _, s := range requestPath {
		t.Run(s.name, func(t *testing.T) {
			p := s.params()
			fill(t, p)
			rec := &recorder{}
			require.ErrorIs(t, s.method(New(rec), t.Context(), p), errRecorded)
			st := s.bind(p)
			defer st.Release()
			require.Equal(t, rec.sql, st.SQL)
			require.Len(t, st.Args, len(rec.args))
			for i := range rec.args {
				require.Equal(t, plain(rec.args[i]), plain(st.Args[i]), "argument $%d", i+1)
			}
		})
	}
}
