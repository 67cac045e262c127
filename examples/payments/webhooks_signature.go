package payments

import (
	"fmt"

	"github.com/pgsaga/pgsaga/worker"
)

// checkWebhookSecrets refuses secrets a sender could guess or share: a sender holding another
// source's secret could sign for it, and record event ids under it.
func checkWebhookSecrets(secrets map[string][]byte) error {
	owner := make(map[string]string, len(secrets))
	for source, secret := range secrets {
		if source == "" || len(source) > 255 {
			return fmt.Errorf("payments: Config.WebhookSecrets: a source must be 1-255 characters, got %q", source)
		}
		if len(secret) < worker.MinWebhookSecretLength {
			return fmt.Errorf("payments: Config.WebhookSecrets: the secret of %q must be at least %d bytes", source, worker.MinWebhookSecretLength)
		}
		if other, ok := owner[string(secret)]; ok {
			return fmt.Errorf("payments: Config.WebhookSecrets: %q and %q share a secret; each source needs its own", other, source)
		}
		owner[string(secret)] = source
	}
	return nil
}
