package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// sizes are the key table's and the tombstone table's sizes on disk, in bytes.
type sizes struct {
	// heap, toast and indexes are pgsaga_key's; keys is its number of rows.
	heap, toast, indexes, keys int64
	// tombstones is the tombstone table's whole size (heap, TOAST, indexes), tombstoneRows
	// its rows; both 0 when the schema has no tombstones.
	tombstones, tombstoneRows int64
}

func (s sizes) total() int64 { return s.heap + s.toast + s.indexes + s.tombstones }

func (s sizes) String() string {
	out := fmt.Sprintf("keys %d: heap %s, TOAST %s, indexes %s", s.keys, mb(s.heap), mb(s.toast), mb(s.indexes))
	if s.tombstoneRows > 0 || s.tombstones > 0 {
		out += fmt.Sprintf(" | tombstones %d: %s", s.tombstoneRows, mb(s.tombstones))
	}
	return out
}

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }

// sizesSQL reads the sizes; the row counts are exact (a count of the table).
const sizesSQL = `SELECT pg_relation_size('pgsaga_key'),
	pg_total_relation_size('pgsaga_key') - pg_relation_size('pgsaga_key') - pg_indexes_size('pgsaga_key'),
	pg_indexes_size('pgsaga_key'), (SELECT count(*) FROM pgsaga_key),
	coalesce(pg_total_relation_size(to_regclass('pgsaga_key_tombstone')), 0)`

func measureSizes(ctx context.Context, pool *pgxpool.Pool) (sizes, error) {
	var s sizes
	if err := pool.QueryRow(ctx, sizesSQL).Scan(&s.heap, &s.toast, &s.indexes, &s.keys, &s.tombstones); err != nil {
		return s, fmt.Errorf("error measuring sizes: %w", err)
	}
	if s.tombstones > 0 {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pgsaga_key_tombstone`).Scan(&s.tombstoneRows); err != nil {
			return s, fmt.Errorf("error counting tombstones: %w", err)
		}
	}
	return s, nil
}
