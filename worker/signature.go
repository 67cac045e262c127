package worker

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Webhook signatures, as payment providers sign theirs (this is Stripe's scheme). The worker signs
// every outbox delivery with Config.WebhookSecrets; a receiver checks it with VerifyWebhook (or
// ReadWebhookSignature, then WebhookSignature.Verify once the body is read). The sender
// computes HMAC-SHA256, under the secret it shares with the receiver, of the timestamp, a dot
// and the raw body, and sends
//
//	Pgsaga-Signature: t=1700000000,v1=5257a869e7…
//
// The receiver recomputes it over the bytes it got, compares in constant time, and refuses a
// timestamp further than a tolerance from its clock, so a captured delivery cannot be replayed
// after that; within it, the inbox makes a replay a no-op. While a secret is being rotated the
// sender signs with both (two v1 values) and the receiver accepts either. The signature covers
// only the body: whatever the receiver acts on (the event id, its type) must come from there.

// HeaderWebhookSignature is the header carrying a webhook's timestamp and signatures.
const HeaderWebhookSignature = "Pgsaga-Signature"

// DefaultWebhookTolerance is how far a signature's timestamp may be from the receiver's clock.
const DefaultWebhookTolerance = 5 * time.Minute

// MinWebhookSecretLength is the shortest secret accepted, in bytes.
const MinWebhookSecretLength = 16

var (
	// ErrWebhookSignatureInvalid is returned when no signature of the header is the body's under
	// the source's secret, or the header is empty or not "t=<unix seconds>,v1=<hex>[,v1=<hex>…]".
	// A receiver that answers a missing header apart checks for one before reading it.
	ErrWebhookSignatureInvalid = errors.New("the webhook's signature does not verify")
	// ErrWebhookSignatureExpired is returned when the signature's timestamp is further than the
	// tolerance from now: an old delivery replayed, or a clock far off.
	ErrWebhookSignatureExpired = errors.New("the webhook's signature timestamp is outside the tolerance")
)

// SignWebhook returns the Pgsaga-Signature value for body sent at t, with one v1 signature per
// secret (two while rotating).
func SignWebhook(t time.Time, body []byte, secrets ...[]byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	var b strings.Builder
	b.WriteString("t=" + ts)
	for _, secret := range secrets {
		b.WriteString(",v1=")
		b.WriteString(hex.EncodeToString(webhookMAC(secret, ts, body)))
	}
	return b.String()
}

// VerifyWebhook checks a Pgsaga-Signature header value against body and secret: one of its v1
// signatures must be the body's, and its timestamp within tolerance of now (either side).
func VerifyWebhook(header string, body, secret []byte, now time.Time, tolerance time.Duration) error {
	sig, err := ReadWebhookSignature(header, now, tolerance)
	if err != nil {
		return err
	}
	return sig.Verify(body, secret)
}

// WebhookSignature is a Pgsaga-Signature header whose form and timestamp were checked.
type WebhookSignature struct {
	ts         string // as written: it is signed as written
	signatures []string
}

// ReadWebhookSignature reads "t=…,v1=…[,v1=…]" and checks the timestamp: all that can be refused
// before the body is read. Other schemes' entries are ignored, as Stripe's are.
func ReadWebhookSignature(header string, now time.Time, tolerance time.Duration) (*WebhookSignature, error) {
	if strings.TrimSpace(header) == "" {
		return nil, fmt.Errorf("%w: the webhook has no %s header", ErrWebhookSignatureInvalid, HeaderWebhookSignature)
	}
	var sig WebhookSignature
	for item := range strings.SplitSeq(header, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(item), "=")
		switch {
		case !ok:
			return nil, ErrWebhookSignatureInvalid
		case key == "t":
			if sig.ts != "" || value == "" || len(value) > 12 || strings.Trim(value, "0123456789") != "" {
				return nil, ErrWebhookSignatureInvalid
			}
			sig.ts = value
		case key == "v1":
			sig.signatures = append(sig.signatures, value)
		}
	}
	if sig.ts == "" || len(sig.signatures) == 0 {
		return nil, ErrWebhookSignatureInvalid
	}
	unix, _ := strconv.ParseInt(sig.ts, 10, 64) // at most 12 digits
	if age := now.Sub(time.Unix(unix, 0)); age > tolerance || age < -tolerance {
		return nil, ErrWebhookSignatureExpired
	}
	return &sig, nil
}

// Verify checks that one of the signatures is body's under secret, in constant time.
func (s *WebhookSignature) Verify(body, secret []byte) error {
	want := webhookMAC(secret, s.ts, body)
	for _, v1 := range s.signatures {
		if got, err := hex.DecodeString(v1); err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrWebhookSignatureInvalid
}

func webhookMAC(secret []byte, ts string, body []byte) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return mac.Sum(nil)
}
