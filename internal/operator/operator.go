package operator

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
)

// DB is what the store needs of a database handle (*pgxpool.Pool has it).
type DB interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Errors of the store.
var (
	// ErrNameTaken is returned by Add for a name an operator has, or had.
	ErrNameTaken = errors.New("an operator with this name exists (a revoked operator's name stays taken)")
	// ErrInvalidName is returned by Add for a name that breaks NameRule.
	ErrInvalidName = errors.New("an operator's name is 1-64 characters: letters, digits and . _ @ - (starting with a letter or digit)")
	// ErrNotFound is returned by Revoke for a name no operator has.
	ErrNotFound = errors.New("no operator has this name")
	// ErrUnknownToken is returned by Authenticate for a token no operator (not revoked) has.
	ErrUnknownToken = errors.New("no operator has this token")
)

// NameRule is what an operator's name may be: it is printed in the keys' history.
var NameRule = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// Operator is an operator as stored: never their token.
type Operator struct {
	Name      string
	CreatedAt time.Time
	// RevokedAt is when the operator was revoked, or nil.
	RevokedAt *time.Time
}

// Store reads and writes pgsaga_operator.
type Store struct {
	db DB
}

// NewStore returns the operators kept in db (migrated with pgsaga's migrations).
func NewStore(db DB) *Store { return &Store{db: db} }

// Add creates an operator and returns them with their token, which exists only here: show it
// once.
func (s *Store) Add(ctx context.Context, name string) (*Operator, string, error) {
	if !NameRule.MatchString(name) {
		return nil, "", ErrInvalidName
	}
	token := NewToken()
	op := &Operator{Name: name}
	err := s.db.QueryRow(ctx, insertOperatorSQL, pgx.NamedArgs{"name": name, "token_hash": Digest(token)}).Scan(&op.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", ErrNameTaken
	}
	if err != nil {
		return nil, "", fmt.Errorf("error adding operator %s: %w", name, err)
	}
	return op, token, nil
}

// List returns every operator, revoked ones included, by name.
func (s *Store) List(ctx context.Context) ([]*Operator, error) {
	rows, err := s.db.Query(ctx, listOperatorsSQL)
	if err != nil {
		return nil, fmt.Errorf("error listing operators: %w", err)
	}
	ops, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*Operator, error) { return scanOperator(row) })
	if err != nil {
		return nil, fmt.Errorf("error listing operators: %w", err)
	}
	return ops, nil
}

// Revoke revokes the operator name at once: no sign-in, Bearer request or session of theirs
// is let in from the commit on. Revoking again changes nothing; an unknown name is ErrNotFound.
func (s *Store) Revoke(ctx context.Context, name string) (*Operator, error) {
	op, err := scanOperator(s.db.QueryRow(ctx, revokeOperatorSQL, pgx.NamedArgs{"name": name}))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("error revoking operator %s: %w", name, err)
	}
	return op, nil
}

// Authenticate returns the name of the operator (not revoked) whose token this is, or
// ErrUnknownToken. Any other error is the database's.
func (s *Store) Authenticate(ctx context.Context, token string) (string, error) {
	if token == "" {
		return "", ErrUnknownToken
	}
	digest := Digest(token)
	var (
		name   string
		stored []byte
	)
	err := s.db.QueryRow(ctx, findByTokenSQL, pgx.NamedArgs{"token_hash": digest}).Scan(&name, &stored)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrUnknownToken
	}
	if err != nil {
		return "", fmt.Errorf("error finding an operator: %w", err)
	}
	if subtle.ConstantTimeCompare(digest, stored) != 1 {
		return "", ErrUnknownToken
	}
	return name, nil
}

// Active reports whether the operator name exists and is not revoked.
func (s *Store) Active(ctx context.Context, name string) (bool, error) {
	var ok bool
	if err := s.db.QueryRow(ctx, activeSQL, pgx.NamedArgs{"name": name}).Scan(&ok); err != nil {
		return false, fmt.Errorf("error reading operator %s: %w", name, err)
	}
	return ok, nil
}

// CountActive counts the operators not revoked.
func (s *Store) CountActive(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRow(ctx, countActiveSQL).Scan(&n); err != nil {
		return 0, fmt.Errorf("error counting operators: %w", err)
	}
	return n, nil
}

func scanOperator(row pgx.Row) (*Operator, error) {
	op := &Operator{}
	if err := row.Scan(&op.Name, &op.CreatedAt, &op.RevokedAt); err != nil {
		return nil, err
	}
	return op, nil
}

// tokenPrefix marks an operator's token, so that one found in a log or a paste is recognised.
const tokenPrefix = "pgso_"

// NewToken is a new operator token: tokenPrefix and 32 random bytes in unpadded base64url.
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics if the system's source does)
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// Digest is the SHA-256 digest of a token, as stored.
func Digest(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}
