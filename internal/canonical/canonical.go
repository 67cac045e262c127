// Package canonical turns a JSON body into its canonical form (RFC 8785, with numbers kept exact)
// and fingerprints it: the request fingerprint that tells a retry from a different request
// under the same idempotency key. Package saga's Fingerprint is its public face.
//
// It is hand-written because it runs on every request: the same bytes from encoding/json's
// tokens (plain_test.go, its reference in tests) take 8 to 12 times as long and cost a replay
// 6-7% of its throughput (docs/performance.md, "Shortcuts measured"), and gowebpki/jcs rounds
// numbers to doubles, which the fingerprint must not.
package canonical

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"math"
	"sync"
)

// Fingerprint is the sha256 of the canonical form of a JSON body: RFC 8785 (JCS), except that
// numbers keep their exact decimal value instead of being rounded to IEEE doubles. Retries that
// differ only in member order, white space, string escapes or the spelling of a number (1, 1.0,
// 1e0, 10e-1) get one fingerprint; any change of value gets another, including one a double
// cannot see (9007199254740993 against 9007199254740992, 0.1 against its double's exact value
// 0.1000000000000000055511151231257827…). Where every number is written as its double's shortest
// spelling (all small integers, most decimals people type) the canonical form is byte for byte
// RFC 8785's, so the fingerprint is too.
//
// It fails on a body that is not JSON (RFC 8259), and on what RFC 8785 refuses in JSON: duplicate
// member names (compared after unescaping), invalid UTF-8 or unpaired surrogate escapes in
// strings, numbers beyond the double range (above about 1.8e308, as RFC 8785 requires), and
// nesting deeper than 10000. Unlike RFC 8785 it keeps a tiny number exact rather than
// rounding it to 0, and refuses one whose exponent has more than 9 digits.
//
// It is on every request's path: it reads the body twice (validate and index, then write),
// streams the canonical form into the hash through a small buffer, and allocates only its
// result once its pooled state is warm.
func Fingerprint(body []byte) ([]byte, error) {
	c := canonicalizers.Get().(*canonicalizer)
	defer c.release()
	return c.appendFingerprint(make([]byte, 0, sha256.Size), body)
}

// maxNestingDepth bounds arrays and objects inside each other, as RFC 8785's reference code and
// encoding/json do: both passes recurse once per level.
const maxNestingDepth = 10000

// Beyond these capacities a canonicalizer's index is dropped instead of pooled, so one large
// body does not pin its memory for the life of the process.
const (
	maxPooledMembers = 1 << 12
	maxPooledNames   = 1 << 14
)

// outBufferSize is how much canonical text is gathered before it is written to the hash: large
// enough that the hash sees few calls, small enough to stay in cache.
const outBufferSize = 4096

var canonicalizers = sync.Pool{New: func() any { return newCanonicalizer() }}

// canonicalizer turns one JSON body into its canonical form, in two passes over the input:
//
//  1. index (index.go) checks the body and records, for each object in document
//     order, its members sorted by name, with where each member's value starts;
//  2. write (write.go) walks the body again, writing scalars and arrays in document
//     order and each object's members in the recorded order, into a buffer flushed to w.
//
// Nothing else is built: no tree of values and no whole canonical string, so the cost is linear
// in the body whatever its nesting (a pass that returned each subtree's text would copy it once
// per level above it).
type canonicalizer struct {
	in []byte

	objects []objectIndex
	members []memberIndex // each object's members, contiguous and sorted
	pending []memberIndex // members of the objects still open, in document order
	names   []byte        // unescaped names of members whose names hold escapes
	depth   int

	next   int // during write: the objects index of the next object met in document order
	w      io.Writer
	werr   error
	out    []byte
	digest hash.Hash
}

// objectIndex is one object of the body, numbered in document (pre-)order.
type objectIndex struct {
	end   int32 // offset just past its '}'
	first int32 // its first member in canonicalizer.members
	count int32 // how many members it has
	after int32 // objects index of the first object after it (past its nested ones)
}

// memberIndex is one member of an object.
type memberIndex struct {
	prefix           uint64 // sort key: see namePrefix
	exactPrefix      bool   // prefix orders this name (see namePrefix)
	rawStart, rawEnd int32  // the name as written, between its quotes
	keyStart, keyEnd int32  // the name unescaped: in the body, or in names when escaped
	value            int32  // offset of the member's value
	objects          int32  // objects index of the first object in (or at) the value
	escaped          bool
}

func newCanonicalizer() *canonicalizer {
	return &canonicalizer{digest: sha256.New(), out: make([]byte, 0, outBufferSize)}
}

// appendFingerprint appends the sha256 of body's canonical form to dst.
func (c *canonicalizer) appendFingerprint(dst, body []byte) ([]byte, error) {
	c.digest.Reset()
	if err := c.canonicalize(c.digest, body); err != nil {
		return nil, fmt.Errorf("error canonicalising JSON: %w", err)
	}
	return c.digest.Sum(dst), nil
}

func (c *canonicalizer) canonicalize(w io.Writer, body []byte) error {
	if len(body) > math.MaxInt32 {
		return fmt.Errorf("a body of %d bytes is too large to fingerprint", len(body))
	}
	c.in, c.w, c.werr, c.depth = body, w, nil, 0
	if err := c.index(); err != nil {
		return err
	}
	c.next = 0
	c.writeValue(skipSpace(c.in, 0))
	c.flush()
	return c.werr
}

// release resets c and returns it to the pool.
func (c *canonicalizer) release() {
	c.reset()
	canonicalizers.Put(c)
}

// reset forgets the last body, keeping the index's memory unless a large body grew it.
func (c *canonicalizer) reset() {
	c.in, c.w, c.werr = nil, nil, nil
	c.objects, c.pending = c.objects[:0], c.pending[:0]
	c.members, c.names = c.members[:0], c.names[:0]
	if cap(c.members) > maxPooledMembers || cap(c.pending) > maxPooledMembers || cap(c.objects) > maxPooledMembers {
		c.objects, c.members, c.pending = nil, nil, nil
	}
	if cap(c.names) > maxPooledNames {
		c.names = nil
	}
}
