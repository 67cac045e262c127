package main

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
)

// intentPaymentID is the id the example service gives the payment of a payment intent: derived
// from the intent alone, so every execution of it — after a failover that lost the key's
// commits too — makes the same payment and charges under the same reference. It is the
// derivation phases.Run.IntentID documents, written out here so the judge checks the binary
// against the documented rule rather than against the code it runs: "pay_" and 26 characters of
// lowercase, unpadded base32 of the first 16 bytes of the SHA-256 of "pgsaga intent id v1", the
// tenant, the actor, the key and "pay", each preceded by its length as a uvarint.
func intentPaymentID(sc scope) string {
	var in []byte
	for _, part := range []string{"pgsaga intent id v1", sc.Tenant, sc.Actor, sc.Key, "pay"} {
		in = binary.AppendUvarint(in, uint64(len(part)))
		in = append(in, part...)
	}
	sum := sha256.Sum256(in)
	return "pay_" + intentEncoding.EncodeToString(sum[:16])
}

var intentEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
