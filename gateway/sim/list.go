package sim

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/pgsaga/pgsaga/gateway"
)

// listPageSize is how many charges a lister reads at a time: the in-process one under the
// simulator's lock, the HTTP client per request.
const listPageSize = 100

// maxListLimit bounds the limit of GET /charges?since=….
const maxListLimit = 1000

// maxListBody bounds a page of the list read by the client: listPageSize charges with long
// references.
const maxListBody = 16 << 20

// errNoCursor is a starting_after that names no charge that has landed.
var errNoCursor = errors.New("starting_after names no charge")

var (
	_ gateway.Lister = (*Simulator)(nil)
	_ gateway.Lister = inProcess{}
	_ gateway.Lister = (*Client)(nil)
)

// ListCharges yields every charge that has landed and was created at or after since, oldest
// first (by when it landed, then by arrival), each as it stands when its page is read (a
// pending one may have turned final). It reads the ledger a page at a time: a charge that
// lands while the iteration runs is yielded at its end, and none is yielded twice. Listing is
// a capability of its own: it works whether or not inquiry is on.
func (s *Simulator) ListCharges(ctx context.Context, since time.Time) iter.Seq2[gateway.Charge, error] {
	return func(yield func(gateway.Charge, error) bool) {
		after := ""
		for {
			if err := ctx.Err(); err != nil {
				yield(gateway.Charge{}, fmt.Errorf("error listing charges: %w", err))
				return
			}
			page, more, err := s.listPage(since, after, listPageSize)
			if err != nil {
				yield(gateway.Charge{}, fmt.Errorf("error listing charges: %w", err))
				return
			}
			for _, c := range page {
				if !yield(c, nil) {
					return
				}
			}
			if !more {
				return
			}
			after = page[len(page)-1].ID
		}
	}
}

func (g inProcess) ListCharges(ctx context.Context, since time.Time) iter.Seq2[gateway.Charge, error] {
	return g.s.ListCharges(ctx, since)
}

// listPage returns, oldest first, up to limit (0: every) charges landed by now, created at or
// after since and after the charge with id after (when not empty), each as it stands; more
// reports whether others follow. Charges are ordered by creation time, then by arrival: a charge
// that has not landed yet lands after now, so it can only come after every charge already
// listed, and a cursor stays valid however the ledger grows.
func (s *Simulator) listPage(since time.Time, after string, limit int) (page []gateway.Charge, more bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	cursor := -1
	if after != "" {
		i, ok := s.byID[after]
		if !ok || !s.charges[i].landed(now) {
			return nil, false, fmt.Errorf("%w: %q", errNoCursor, after)
		}
		cursor = i
	}
	order := func(i, j int) int {
		return cmp.Or(s.charges[i].charge.CreatedAt.Compare(s.charges[j].charge.CreatedAt), cmp.Compare(i, j))
	}
	var found []int
	for i, r := range s.charges {
		if r.landed(now) && !r.charge.CreatedAt.Before(since) && (cursor < 0 || order(i, cursor) > 0) {
			found = append(found, i)
		}
	}
	slices.SortFunc(found, order)
	if limit > 0 && len(found) > limit {
		found, more = found[:limit], true
	}
	page = make([]gateway.Charge, len(found))
	for k, i := range found {
		page[k] = s.charges[i].at(now)
	}
	return page, more, nil
}

// ListCharges pages through GET /charges?since=T (listPageSize charges a request, each page
// after the last charge of the one before), yielding every charge created at or after since,
// oldest first, each as it stands when its page is read. A 404 means the gateway cannot list:
// one error wrapping gateway.ErrUnsupported. Reads change nothing: a failure is a
// gateway.NotDone (phases.Permanent for a refused query), yielded once, after which
// the iteration ends. A listed charge whose status is none of succeeded, declined and pending
// is an error, never taken for one of them.
func (c *Client) ListCharges(ctx context.Context, since time.Time) iter.Seq2[gateway.Charge, error] {
	return func(yield func(gateway.Charge, error) bool) {
		after := ""
		for {
			page, err := c.listPage(ctx, since, after)
			if err != nil {
				yield(gateway.Charge{}, fmt.Errorf("error listing charges since %s: %w", since.Format(time.RFC3339Nano), err))
				return
			}
			for _, charge := range page.Charges {
				if !yield(charge, nil) {
					return
				}
			}
			if !page.HasMore || len(page.Charges) == 0 {
				return
			}
			after = page.Charges[len(page.Charges)-1].ID
		}
	}
}

// listPage reads one page of the list, after the charge with id after when not empty.
func (c *Client) listPage(ctx context.Context, since time.Time, after string) (*listAnswer, error) {
	q := url.Values{"since": {since.UTC().Format(time.RFC3339Nano)}, "limit": {strconv.Itoa(listPageSize)}}
	if after != "" {
		q.Set("starting_after", after)
	}
	resp, err := c.read(ctx, "/charges?"+q.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("%w (%w)", gateway.ErrUnsupported, readError(resp))
	}
	var page listAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxListBody)).Decode(&page); err != nil {
		return nil, gateway.NotDone(fmt.Errorf("error reading the list: %w", err))
	}
	for _, charge := range page.Charges {
		if !charge.Status.Final() && charge.Status != gateway.StatusPending {
			return nil, fmt.Errorf("charge %s has unknown status %q", charge.ID, charge.Status)
		}
	}
	return &page, nil
}
