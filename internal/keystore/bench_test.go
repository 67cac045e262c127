package keystore

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m, nil) }

// BenchmarkReadHead measures the request path's read of a key sent three ways: bound into a
// pooled Statement (as the request path sends it), by its generated method, and with
// pgx.NamedArgs over the same statement. Run with -benchmem: the allocations are the figure.
func BenchmarkReadHead(b *testing.B) {
	db := dbtest.NewDB(b)
	ctx := context.Background()
	_, err := db.Pool.Exec(ctx, `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
		request_hash, request_body, lease_token) VALUES ('t', 'a', 'key-00000001', 'op', 'POST', '/x', '\x00', '', gen_random_uuid())`)
	if err != nil {
		b.Fatal(err)
	}
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	c := conn.Conn()
	p := &ReadHeadParams{TenantID: "t", ActorID: "a", Key: "key-00000001"}
	named := pgx.NamedArgs{"tenant_id": p.TenantID, "actor_id": p.ActorID, "key": p.Key}
	var row ReadHeadRow
	for _, way := range []struct {
		name string
		read func() error
	}{
		{"bound", func() error {
			st := BindReadHead(p)
			defer st.Release()
			return st.QueryRow(ctx, c, &row)
		}},
		{"generated", func() error {
			var err error
			row, err = New(c).ReadHead(ctx, p)
			return err
		}},
		{"named", func() error {
			return c.QueryRow(ctx, readHeadNamed, named).Scan(&row.Operation, &row.Method, &row.Path, &row.RequestHash,
				&row.Status, &row.ParkedReason, &row.LastError, &row.ResponseStatus, &row.ResponseHeaders, &row.ResponseBody,
				&row.LeaseLeftUs, &row.NextAttemptInUs, &row.RecoveryPoint, &row.SinceWriteUs)
		}},
	} {
		b.Run(way.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := way.read(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// readHeadNamed is ReadHead as pgx.NamedArgs takes it.
const readHeadNamed = `SELECT operation, method, path, request_hash, status,
    coalesce(parked_reason, '')::text AS parked_reason, coalesce(last_error, '')::text AS last_error,
    response_status, response_headers, response_body,
    (CASE WHEN locked_until > clock_timestamp()
        THEN (extract(epoch FROM locked_until - clock_timestamp()) * 1000000)::bigint ELSE 0 END)::bigint AS lease_left_us,
    (extract(epoch FROM next_attempt_at - clock_timestamp()) * 1000000)::bigint AS next_attempt_in_us,
    recovery_point, (extract(epoch FROM clock_timestamp() - updated_at) * 1000000)::bigint AS since_write_us
FROM pgsaga_key WHERE tenant_id = @tenant_id AND actor_id = @actor_id AND key = @key`
