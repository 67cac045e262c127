package payments_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/worker"
)

// FuzzVerifyWebhook: any header and body are answered without panicking, and only a signature
// made with the secret over these very bytes verifies; one the sender made verifies, and fails
// once a byte of the body, the timestamp or the secret changes.
func FuzzVerifyWebhook(f *testing.F) {
	now := time.Unix(1_700_000_000, 0)
	f.Add("t=1700000000,v1=00", []byte(`{"id":"evt-1"}`))
	f.Add(worker.SignWebhook(now, []byte(`{"id":"evt-1"}`), gatewaySecret), []byte(`{"id":"evt-1"}`))
	f.Add(worker.SignWebhook(now, []byte(`{}`), bankSecret, gatewaySecret), []byte(`{}`))
	f.Add("t=,v1=", []byte{})
	f.Add(" t=1700000000 , v1=zz ,v0=ab,t=1", []byte("x"))
	f.Add("t=99999999999999999999,v1=aa", []byte("x"))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		err := worker.VerifyWebhook(header, body, gatewaySecret, now, time.Minute)
		if err == nil {
			var unix int64
			for item := range strings.SplitSeq(header, ",") {
				if k, v, _ := strings.Cut(strings.TrimSpace(item), "="); k == "t" {
					unix, _ = strconv.ParseInt(v, 10, 64)
				}
			}
			v1 := strings.Split(worker.SignWebhook(time.Unix(unix, 0), body, gatewaySecret), ",")[1]
			require.Contains(t, strings.ToLower(header), v1, "%q verified without the body's signature", header)
		}

		good := worker.SignWebhook(now, body, gatewaySecret)
		require.NoError(t, worker.VerifyWebhook(good, body, gatewaySecret, now.Add(30*time.Second), time.Minute))
		require.ErrorIs(t, worker.VerifyWebhook(good, body, bankSecret, now, time.Minute), worker.ErrWebhookSignatureInvalid)
		require.ErrorIs(t, worker.VerifyWebhook(good, body, gatewaySecret, now.Add(2*time.Minute), time.Minute), worker.ErrWebhookSignatureExpired)
		if len(body) > 0 {
			tampered := append([]byte(nil), body...)
			tampered[len(tampered)/2] ^= 1
			require.ErrorIs(t, worker.VerifyWebhook(good, tampered, gatewaySecret, now, time.Minute), worker.ErrWebhookSignatureInvalid)
		}
	})
}
