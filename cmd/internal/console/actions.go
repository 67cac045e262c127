package console

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/pgsaga/pgsaga/internal/keyjson"
	"github.com/pgsaga/pgsaga/internal/pgavail"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// The actions do what `pgsaga resume` and `pgsaga settle` do, recorded in the key's history as
// done by the signed-in operator. A script gets the stored response, {"status","body"}, or an error; a
// browser's form post is sent back to the key's page (303), which shows the outcome once.

// maxNote caps an operator's note and reference.
const maxNote = 2000

// resume is POST /keys/{tenant}/{actor}/{key}/resume: Resume with a parked key allowed.
func (c *Console) resume(w http.ResponseWriter, r *http.Request) {
	scope, key, ok := c.keyPath(w, r)
	if !ok {
		return
	}
	res, err := c.cfg.Client.Resume(r.Context(), scope, key, &saga.ResumeOpts{Parked: true, By: who(r).operator})
	done := "Resumed"
	if res != nil && res.Replayed {
		done = "Nothing to resume: the key was already completed"
	}
	c.answerAction(w, r, scope, key, done, res, err)
}

// settle is POST /keys/{tenant}/{actor}/{key}/settle with outcome, note and reference.
func (c *Console) settle(w http.ResponseWriter, r *http.Request) {
	scope, key, ok := c.keyPath(w, r)
	if !ok {
		return
	}
	p, err := settleParams(r)
	if err != nil {
		c.actionFailed(w, r, scope, key, http.StatusBadRequest, codeInvalidRequest, err.Error())
		return
	}
	res, err := c.cfg.Client.Settle(r.Context(), scope, key, p)
	c.answerAction(w, r, scope, key, "Settled as "+string(p.Outcome), res, err)
}

// settleParams reads and checks a settlement from the form (or JSON body).
func settleParams(r *http.Request) (*saga.SettleParams, error) {
	if err := parseForm(r); err != nil {
		return nil, fmt.Errorf("the form could not be read: %w", err)
	}
	p := &saga.SettleParams{
		Outcome:   phases.SettleOutcome(r.PostForm.Get("outcome")),
		Note:      strings.TrimSpace(r.PostForm.Get("note")),
		Reference: strings.TrimSpace(r.PostForm.Get("reference")),
		By:        who(r).operator,
	}
	switch {
	case p.Outcome != phases.SettleSucceeded && p.Outcome != phases.SettleFailed:
		return nil, errors.New("outcome must be succeeded or failed")
	case p.Note == "":
		return nil, errors.New("a note is required: say why")
	}
	for name, v := range map[string]string{"note": p.Note, "reference": p.Reference} {
		if err := checkText(name, v, maxNote); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// answerAction answers an action's result or error.
func (c *Console) answerAction(w http.ResponseWriter, r *http.Request, scope saga.Scope, key, done string, res *saga.Result, err error) {
	if err != nil {
		status, code, msg := actionError(key, err)
		switch status {
		case http.StatusInternalServerError:
			c.cfg.Logger.ErrorContext(r.Context(), "console: action failed", "path", r.URL.Path, "error", err)
		case http.StatusServiceUnavailable:
			w.Header().Set("Retry-After", "1")
		}
		c.actionFailed(w, r, scope, key, status, code, msg)
		return
	}
	c.cfg.Logger.InfoContext(r.Context(), "console: "+strings.ToLower(done), "operator", who(r).operator,
		"tenant", scope.Tenant, "actor", scope.Actor, "key", key, "status", res.Response.Status)
	if !wantsHTML(r) {
		writeJSON(w, http.StatusOK, keyjson.FromResponse(res.Response))
		return
	}
	c.backToKey(w, r, scope, key, &flash{OK: true, Message: done + ": its stored response is " + statusLine(res.Response.Status) + "."})
}

func (c *Console) actionFailed(w http.ResponseWriter, r *http.Request, scope saga.Scope, key string, status int, code, msg string) {
	if !wantsHTML(r) || status == http.StatusNotFound {
		c.fail(w, r, status, code, msg)
		return
	}
	c.backToKey(w, r, scope, key, &flash{Message: msg})
}

// backToKey sends a browser to the key's page (303), leaving f for it in the session. A Bearer
// request has no session: its page shows the key as it now stands.
func (c *Console) backToKey(w http.ResponseWriter, r *http.Request, scope saga.Scope, key string, f *flash) {
	page := keyURL(scope, key)
	if s := who(r).session; s != nil {
		c.auth.setFlash(s, page, f)
	}
	http.Redirect(w, r, page, http.StatusSeeOther)
}

// actionError is the answer to an action's error: status, code and a message for people.
func actionError(key string, err error) (int, string, string) {
	var (
		inProgress *saga.InProgressError
		parked     *saga.ParkedError
		refused    *saga.RefusedError
		transient  *saga.TransientError
	)
	switch {
	case errors.Is(err, saga.ErrKeyNotFound):
		return http.StatusNotFound, codeNotFound, fmt.Sprintf("There is no key %s.", quote(key))
	case errors.As(err, &refused):
		return refusedAction(refused)
	case errors.As(err, &inProgress):
		return http.StatusConflict, "request_in_progress", fmt.Sprintf("Not resumed: another process holds the key (its lease expires in %s); try again then.", age(inProgress.LeaseRemaining))
	case errors.Is(err, saga.ErrLeaseLost):
		return http.StatusConflict, "lease_lost", "Another process took the key over while this resume ran: it finishes the key."
	case errors.As(err, &parked):
		return http.StatusConflict, "operation_parked", fmt.Sprintf("Resumed, and parked again (%s): %s", parked.Reason, parked.LastError)
	case errors.As(err, &transient):
		return http.StatusServiceUnavailable, codeTemporarilyUnavailable, "Resumed, but it did not finish: " + transient.Err.Error() + ". It stays started; the worker or another resume goes on from here."
	case pgavail.Unavailable(err):
		return http.StatusServiceUnavailable, codeTemporarilyUnavailable, "Not done: the database did not answer; the key is as it was. Try again in a moment."
	}
	return http.StatusInternalServerError, codeInternal, "The action failed; the console's log says why."
}

// refusedAction is the answer to an action the key's state or its operation refused: its code
// is the refusal's reason.
func refusedAction(refused *saga.RefusedError) (int, string, string) {
	switch refused.Reason {
	case saga.RefusedNotParked:
		return http.StatusConflict, "not_parked", "Not settled: only a parked key can be settled (" + refused.Error() + ")."
	case saga.RefusedNoSettleHook:
		return http.StatusConflict, "no_settle_hook", "Not settled: " + refused.Error() + "."
	case saga.RefusedBySettleHook:
		return http.StatusUnprocessableEntity, "settle_refused", "Not settled: " + refused.Err.Error() + "."
	case saga.RefusedUnknownOperation:
		return http.StatusUnprocessableEntity, "unknown_operation", "This console does not have the key's operation: " + refused.Error() + "."
	}
	return http.StatusInternalServerError, codeInternal, "The action failed; the console's log says why."
}
