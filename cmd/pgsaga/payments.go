package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/pflag"

	sagacli "github.com/pgsaga/pgsaga/cmd/pgsaga/cli"
	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
)

// flagGatewayURL is the binary's own flag on the commands that build the payments service
// (serve, worker, resume, settle, reconcile): where payments are charged.
const flagGatewayURL = "gateway-url"

// addPaymentsFlags adds --gateway-url to the commands that build the payments service.
func addPaymentsFlags(_ string, flags *pflag.FlagSet) {
	flags.String(flagGatewayURL, "", "base URL of the gateway simulator (default: an in-process simulator)")
}

// buildPayments builds the example payments service (examples/payments) on the gateway chosen
// by --gateway-url.
func buildPayments(ctx context.Context, p *sagacli.BuildParams) (*sagacli.Service, error) {
	url, err := p.Flags.GetString(flagGatewayURL)
	if err != nil {
		return nil, err
	}
	gw, err := paymentsGateway(url, strings.TrimSpace(p.Getenv(envSimControlToken)))
	if err != nil {
		return nil, err
	}
	p.Logger.Info("payments gateway", "gateway", gatewayName(url))
	svc, err := payments.New(&payments.Config{
		Pool:     p.Pool,
		Gateway:  gw,
		Lease:    p.Lease,
		Logger:   p.Logger,
		Observer: p.Observer,
		// Behind PgBouncer in transaction pooling mode (--database-pooling=transaction), and
		// where duplicates of a request in flight listen (--listen-database-url).
		TransactionPooling: p.TransactionPooling,
		ListenDB:           p.ListenPool,
		// Every succeeded payment emits payment.succeeded in the transaction that records
		// it; `worker --webhook-url` delivers it.
		PaymentHooks: []payments.PaymentHook{payments.PaymentSucceededHook(p.Outbox)},
		// POST /webhooks/{source} verifies each sender's signature with its secret; serve counts
		// and logs the refusals.
		WebhookSecrets: webhookSecrets(p.Getenv, os.Environ()),
		WebhookRefused: func(r *http.Request, code string) { p.AuthRefused(r, "webhook", code) },
		// Its saga client's spans (the OpenTelemetry environment turns them on).
		TracerProvider: p.TracerProvider,
	})
	if err != nil {
		return nil, fmt.Errorf("error building the service: %w", err)
	}
	h, err := svc.Handler(p.Scope)
	if err != nil {
		return nil, fmt.Errorf("error building the service: %w", err)
	}
	// A gateway that can list its charges is reconciled (pgsaga reconcile, the worker's job).
	lister, _ := gw.(gateway.Lister)
	return &sagacli.Service{Client: svc.Client(), Handler: h, Lister: lister,
		// A webhook whose signature verifies counts against its source's share of serve's slots.
		Party: func(r *http.Request, body []byte) string {
			if source := svc.WebhookSender(r, body); source != "" {
				return "webhook:" + source
			}
			return ""
		}}, nil
}

// envWebhookSecretPrefix names the variables holding the receivers' secrets:
// PGSAGA_WEBHOOK_SECRET_<SOURCE> is the secret of POST /webhooks/<source> (source in lower case).
const envWebhookSecretPrefix = "PGSAGA_WEBHOOK_SECRET_"

// webhookSecrets are the webhook receivers' secrets by source, from the variables named in
// environ (read through getenv). An empty value counts as none; PGSAGA_WEBHOOK_SECRET_NEXT is the
// worker's rotation secret, not a source.
func webhookSecrets(getenv func(string) string, environ []string) map[string][]byte {
	out := map[string][]byte{}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		source, ok := strings.CutPrefix(name, envWebhookSecretPrefix)
		if !ok || source == "" || source == "NEXT" {
			continue
		}
		if v := getenv(name); v != "" {
			out[strings.ToLower(source)] = []byte(v)
		}
	}
	return out
}

// paymentsGateway is the gateway simulator over HTTP at url (its control endpoints guarded by
// controlToken, when not empty), or an in-process one when url is empty.
func paymentsGateway(url, controlToken string) (gateway.Gateway, error) {
	if url == "" {
		return sim.New(nil).Gateway(), nil
	}
	gw, err := sim.NewClient(url, &sim.ClientOpts{ControlToken: controlToken})
	if err != nil {
		return nil, fmt.Errorf("error connecting to the gateway at %s: %w", url, err)
	}
	return gw, nil
}

func gatewayName(url string) string {
	if url == "" {
		return "in-process simulator"
	}
	return url
}
