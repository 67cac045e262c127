package perflab

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgsaga/pgsaga/internal/canonical"
)

// BenchmarkPieces measures, alone, client-side pieces the engine's profile points at.
func BenchmarkPieces(b *testing.B) {
	big := []byte(`{"amount":100,"currency":"USD","invoice_id":"inv_123456789","note":"` + strings.Repeat("x", 900) + `"}`)
	for _, c := range []struct {
		name string
		body []byte
	}{{"fingerprint/14B", body}, {"fingerprint/1KB", big}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := canonical.Fingerprint(c.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The lease token as a query parameter: google/uuid's UUID is a driver.Valuer, which pgx
	// formats as text, fails to encode as binary uuid, and parses back; pgtype.UUID is direct.
	m := pgtype.NewMap()
	token := uuid.New()
	for _, c := range []struct {
		name string
		v    any
	}{{"token/uuid.UUID", token}, {"token/pgtype.UUID", pgtype.UUID{Bytes: token, Valid: true}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 64)
			for b.Loop() {
				if _, err := m.Encode(pgtype.UUIDOID, pgtype.BinaryFormatCode, c.v, buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
