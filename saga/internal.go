package saga

import "github.com/pgsaga/pgsaga/internal/sibling"

// Internal returns the client's operations that pgsaga's own packages run and an application does
// not: the worker's sweep and resume jobs (ReserveDueTx, ResumeDue, ResumeNextDue), its metrics
// (KeyEstimate), reconciliation (CallReferenceList). Its argument's type is internal to this
// module, so no other module can call it.
func (c *Client) Internal(sibling.Token) *internalOps { return &internalOps{c: c} }

// internalOps are a client's operations for pgsaga's own packages (see Client.Internal).
type internalOps struct{ c *Client }
