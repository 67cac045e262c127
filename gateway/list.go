package gateway

import (
	"context"
	"iter"
	"time"
)

// Lister is implemented by a gateway whose provider can list the charges it created, by time.
// Reconciliation reads it: a charge the provider holds that no completed key accounts for is
// what a database failover that lost acknowledged commits leaves behind.
//
// ListCharges yields every charge created at or after since, oldest first, each as it stands
// now, with CreatedAt set (on the provider's clock). An adapter pages through the provider's
// list lazily; iteration stops at the first error, which it yields with a zero Charge. A
// provider that cannot list yields one error wrapping ErrUnsupported.
type Lister interface {
	ListCharges(ctx context.Context, since time.Time) iter.Seq2[Charge, error]
}
