package runstate

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"strings"
)

// Domains keep an id and a reference apart even when their parts are alike.
const (
	intentIDDomain  = "pgsaga intent id v1"
	referenceDomain = "pgsaga call reference v1"
)

// ReferencePrefix begins every default downstream reference.
const ReferencePrefix = "ref_"

// intentEncoding is lowercase RFC 4648 base32 without padding: letters and the digits 2–7,
// safe in URLs, file names and every provider's key and metadata fields.
var intentEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// IntentHash is 26 characters of lowercase base32: the first 128 bits of SHA-256 over domain
// and parts, each preceded by its length (so no two lists of parts hash alike). 128 bits make a
// collision between any two of 2^40 intents a chance below 1 in 10^14.
//
// The derivation is stored (ids in tables, references at providers): it never changes.
func IntentHash(domain string, parts ...string) string { return intentString("", domain, parts...) }

// hashLen is the length of an IntentHash.
const hashLen = 26

// intentString is prefix followed by the IntentHash of domain and parts, built with one
// allocation: it runs for every call step that declares no reference.
func intentString(prefix, domain string, parts ...string) string {
	var buf [512]byte
	in := appendPart(buf[:0], domain)
	for _, p := range parts {
		in = appendPart(in, p)
	}
	sum := sha256.Sum256(in)
	var hash [hashLen]byte
	intentEncoding.Encode(hash[:], sum[:16])
	var b strings.Builder
	b.Grow(len(prefix) + hashLen)
	b.WriteString(prefix)
	b.Write(hash[:])
	return b.String()
}

// appendPart appends p preceded by its length as a uvarint.
func appendPart(b []byte, p string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(p))), p...)
}

// IntentID is prefix, "_", and the IntentHash of the key's scope, the key and prefix.
func IntentID(tenant, actor, key, prefix string) string {
	return intentString(prefix+"_", intentIDDomain, tenant, actor, key, prefix)
}

// IntentID is the IntentID of the run's intent.
func (s *State) IntentID(prefix string) string { return IntentID(s.tenant, s.actor, s.key, prefix) }

// DefaultReference is the downstream reference of a call step that declares none:
// ReferencePrefix and the IntentHash of the key's scope, the key, the operation's and the
// step's names.
func DefaultReference(tenant, actor, key, operation, step string) string {
	return intentString(ReferencePrefix, referenceDomain, tenant, actor, key, operation, step)
}
