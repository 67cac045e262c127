package apikey

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgsaga/pgsaga/saga"
)

// DB is what the store needs of a database handle (*pgxpool.Pool has it).
type DB interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Errors of the store.
var (
	// ErrNotFound is returned by Revoke for an id no key has.
	ErrNotFound = errors.New("no API key has this id")
	// ErrUnauthenticated is returned by Verify for a secret that is malformed, unknown or
	// revoked: which of these is not said.
	ErrUnauthenticated = errors.New("a valid API key is required: Authorization: Bearer <secret>")
	// ErrInvalidScope is returned by Create for a tenant or actor that is empty or longer than
	// 64 characters.
	ErrInvalidScope = errors.New("tenant and actor must be 1-64 characters each")
)

// Key is an API key as it is stored: never its secret.
type Key struct {
	// ID names the key (it is part of its secret's text): revoke it by this.
	ID string
	// Scope is the tenant and actor of every request made with the key.
	Scope saga.Scope
	// CreatedAt is when the key was created.
	CreatedAt time.Time
	// RevokedAt is when the key was revoked, or nil while it is valid.
	RevokedAt *time.Time
}

// Created is a new key with its secret, which exists only here: show it once.
type Created struct {
	Key
	// Secret is what a client sends as "Authorization: Bearer <Secret>".
	Secret string
}

// Store reads and writes pgsaga_api_key.
type Store struct {
	db DB
}

// NewStore returns the API keys kept in db (migrated with pgsaga's migrations).
func NewStore(db DB) *Store { return &Store{db: db} }

// Create makes a key for scope and returns it with its secret.
func (s *Store) Create(ctx context.Context, scope saga.Scope) (*Created, error) {
	if !validScopePart(scope.Tenant) || !validScopePart(scope.Actor) {
		return nil, ErrInvalidScope
	}
	id, secret := newSecret()
	digest := sha256.Sum256([]byte(secret))
	k := &Created{Key: Key{ID: id, Scope: scope}, Secret: secret}
	err := s.db.QueryRow(ctx, insertKeySQL, pgx.NamedArgs{
		"id": id, "tenant": scope.Tenant, "actor": scope.Actor, "secret_hash": digest[:],
	}).Scan(&k.CreatedAt)
	if err != nil {
		return nil, fmt.Errorf("error creating an API key: %w", err)
	}
	return k, nil
}

// ListParams filter List.
type ListParams struct {
	// Tenant keeps the keys of this tenant only. Defaults to every tenant.
	Tenant string
}

// List returns the keys, revoked ones included, newest first. params may be nil.
func (s *Store) List(ctx context.Context, params *ListParams) ([]*Key, error) {
	if params == nil {
		params = &ListParams{}
	}
	rows, err := s.db.Query(ctx, listKeysSQL, pgx.NamedArgs{"tenant": params.Tenant})
	if err != nil {
		return nil, fmt.Errorf("error listing API keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*Key, error) { return scanKey(row) })
	if err != nil {
		return nil, fmt.Errorf("error listing API keys: %w", err)
	}
	return keys, nil
}

// Revoke revokes the key id at once: from the commit on, no request authenticates with it, in
// any process. Revoking a revoked key changes nothing. An unknown id is ErrNotFound.
func (s *Store) Revoke(ctx context.Context, id string) (*Key, error) {
	k, err := scanKey(s.db.QueryRow(ctx, revokeKeySQL, pgx.NamedArgs{"id": id}))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("error revoking API key %s: %w", id, err)
	}
	return k, nil
}

// Verify returns the scope of the key whose secret this is. A malformed secret is refused
// without reading the database; a malformed, unknown or revoked one is ErrUnauthenticated. Any
// other error is the database's.
func (s *Store) Verify(ctx context.Context, secret string) (saga.Scope, error) {
	id, ok := parseSecret(secret)
	if !ok {
		return saga.Scope{}, ErrUnauthenticated
	}
	var (
		scope  saga.Scope
		stored []byte
	)
	err := s.db.QueryRow(ctx, verifyKeySQL, pgx.NamedArgs{"id": id}).Scan(&scope.Tenant, &scope.Actor, &stored)
	if errors.Is(err, pgx.ErrNoRows) {
		return saga.Scope{}, ErrUnauthenticated
	}
	if err != nil {
		return saga.Scope{}, fmt.Errorf("error reading API key %s: %w", id, err)
	}
	digest := sha256.Sum256([]byte(secret))
	if subtle.ConstantTimeCompare(digest[:], stored) != 1 {
		return saga.Scope{}, ErrUnauthenticated
	}
	return scope, nil
}

func scanKey(row pgx.Row) (*Key, error) {
	k := &Key{}
	if err := row.Scan(&k.ID, &k.Scope.Tenant, &k.Scope.Actor, &k.CreatedAt, &k.RevokedAt); err != nil {
		return nil, err
	}
	return k, nil
}

// The secret's text: pgs_<id>_<random>, where id is 8 random bytes in hex (public) and random
// 32 random bytes in unpadded base64url (the secret proper).
const (
	secretPrefix = "pgs_"
	idBytes      = 8
	randomBytes  = 32
)

var (
	idLen     = hex.EncodedLen(idBytes)
	randomLen = base64.RawURLEncoding.EncodedLen(randomBytes)
	secretLen = len(secretPrefix) + idLen + 1 + randomLen
)

func newSecret() (id, secret string) {
	b := make([]byte, idBytes+randomBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics if the system's source does)
	id = hex.EncodeToString(b[:idBytes])
	return id, secretPrefix + id + "_" + base64.RawURLEncoding.EncodeToString(b[idBytes:])
}

// parseSecret returns the id a well-formed secret names.
func parseSecret(secret string) (string, bool) {
	if len(secret) != secretLen || !strings.HasPrefix(secret, secretPrefix) {
		return "", false
	}
	rest := secret[len(secretPrefix):]
	id, random := rest[:idLen], rest[idLen:]
	if random[0] != '_' {
		return "", false
	}
	if _, err := hex.DecodeString(id); err != nil || strings.ToLower(id) != id {
		return "", false
	}
	if _, err := base64.RawURLEncoding.Strict().DecodeString(random[1:]); err != nil {
		return "", false
	}
	return id, true
}

// validScopePart is the rule for a tenant or an actor: 1-64 characters of UTF-8, as the key
// table has it.
func validScopePart(s string) bool {
	n := utf8.RuneCountInString(s)
	return n >= 1 && n <= 64 && utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}
