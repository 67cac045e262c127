package stripe

import (
	"fmt"
	"strings"
	"time"

	stripeapi "github.com/stripe/stripe-go/v85"

	"github.com/pgsaga/pgsaga/gateway"
)

// referenceKey is the metadata key holding ChargeParams.Reference on every PaymentIntent.
const referenceKey = "reference"

// chargeStatus is the class of a PaymentIntent status (see the package documentation); false
// for a status this adapter does not know.
func chargeStatus(s stripeapi.PaymentIntentStatus) (gateway.Status, bool) {
	switch s {
	case stripeapi.PaymentIntentStatusSucceeded:
		return gateway.StatusSucceeded, true
	case stripeapi.PaymentIntentStatusProcessing,
		stripeapi.PaymentIntentStatusRequiresAction,
		stripeapi.PaymentIntentStatusRequiresConfirmation,
		stripeapi.PaymentIntentStatusRequiresCapture:
		return gateway.StatusPending, true
	case stripeapi.PaymentIntentStatusRequiresPaymentMethod,
		stripeapi.PaymentIntentStatusCanceled:
		return gateway.StatusDeclined, true
	}
	return "", false
}

// describe maps a PaymentIntent's fields, leaving Status empty. reference is used when the
// PaymentIntent carries none in its metadata.
func describe(pi *stripeapi.PaymentIntent, reference string) gateway.Charge {
	charge := gateway.Charge{
		ID:        pi.ID,
		Amount:    pi.Amount,
		Currency:  strings.ToUpper(string(pi.Currency)),
		Reference: reference,
		CreatedAt: createdAt(pi.Created),
	}
	if ref := pi.Metadata[referenceKey]; ref != "" {
		charge.Reference = ref
	}
	return charge
}

// toCharge maps a PaymentIntent; a status this adapter does not know is gateway.Unknown,
// never taken for a verdict.
func toCharge(pi *stripeapi.PaymentIntent, reference string) (*gateway.Charge, error) {
	charge := describe(pi, reference)
	status, ok := chargeStatus(pi.Status)
	if !ok {
		return nil, gateway.Unknown(fmt.Errorf("stripe PaymentIntent %s for %q has status %q", pi.ID, charge.Reference, pi.Status))
	}
	charge.Status = status
	return &charge, nil
}

// toListed maps a listed PaymentIntent as it stands: a status this adapter does not know is
// kept as Stripe's, which is neither final nor pending for anyone who reads it.
func toListed(pi *stripeapi.PaymentIntent) gateway.Charge {
	charge := describe(pi, "")
	status, ok := chargeStatus(pi.Status)
	if !ok {
		status = gateway.Status(pi.Status)
	}
	charge.Status = status
	return charge
}

// fromChargesAPI maps a charge of the Charges API: succeeded, failed (declined) or pending;
// any other status is gateway.Unknown.
func fromChargesAPI(ch *stripeapi.Charge) (*gateway.Charge, error) {
	charge := &gateway.Charge{
		ID:        ch.ID,
		Amount:    ch.Amount,
		Currency:  strings.ToUpper(string(ch.Currency)),
		Reference: ch.Metadata[referenceKey],
		CreatedAt: createdAt(ch.Created),
	}
	switch ch.Status {
	case stripeapi.ChargeStatusSucceeded:
		charge.Status = gateway.StatusSucceeded
	case stripeapi.ChargeStatusFailed:
		charge.Status = gateway.StatusDeclined
	case stripeapi.ChargeStatusPending:
		charge.Status = gateway.StatusPending
	default:
		return nil, gateway.Unknown(fmt.Errorf("stripe charge %s for %q has status %q", ch.ID, charge.Reference, ch.Status))
	}
	return charge, nil
}

// createdAt is Stripe's created (Unix seconds) as a time in UTC; zero when Stripe gave none.
func createdAt(unix int64) time.Time {
	if unix == 0 {
		return time.Time{}
	}
	return time.Unix(unix, 0).UTC()
}
