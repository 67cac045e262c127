package console

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/pgsaga/pgsaga/internal/operator"
)

// What parseForm refuses, in words for people (never the decoder's).
var (
	errBodyTooLarge = errors.New("the body is over 64 KiB")
	errBadJSON      = errors.New("the body is not a JSON object")
	errBadForm      = errors.New("the body is not a form (application/x-www-form-urlencoded) that could be read")
)

func contextWith(r *http.Request, p *principal) context.Context {
	return context.WithValue(r.Context(), principalKey{}, p)
}

// loginView is the login page's data.
type loginView struct {
	Next     string
	Operator string
	Failed   bool
	Message  string
}

// loginPage shows the login form.
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "login", &loginView{Next: localPath(r.URL.Query().Get("next"))})
}

// operatorField is the login form's optional field naming the operator: when given, the token
// must be theirs, and failures naming them are throttled by name too (see limiter.go).
const operatorField = "operator"

// login trades an operator's token (form field "token") for a session cookie: HttpOnly (no
// script reads it), SameSite=Strict (no other site's page makes the browser send it), Secure and
// __Host- prefixed unless Config.InsecureHTTP, for the session's lifetime. A browser is sent on
// (303); a script gets the session's CSRF token. It needs no CSRF token: a forged login would
// need the token itself. From an address (or naming an operator) with too many failures it
// answers 429 whatever the token; every failure is counted and recorded with the address.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if err := parseForm(r); err != nil {
		c.fail(w, r, http.StatusBadRequest, codeInvalidRequest, "The login form could not be read: "+err.Error())
		return
	}
	next := localPath(r.PostForm.Get("next"))
	named := strings.TrimSpace(r.PostForm.Get(operatorField))
	// A name no operator can have fails, throttled by address alone.
	badName := named != "" && !operator.NameRule.MatchString(named)
	if badName {
		named = ""
	}
	addr := c.cfg.ClientAddr(r)
	if wait, locked := c.limiter.blocked(addr, named); wait > 0 {
		c.tooManyAttempts(w, r, addr, locked, "form", wait)
		return
	}
	name, stored, err := c.operatorOf(r.Context(), r.PostForm.Get("token"))
	if err == nil && (badName || (named != "" && name != named)) {
		err = errUnknownToken
	}
	switch {
	case errors.Is(err, errUnknownToken):
		c.signInFailed(r, addr, named, "form")
		const msg = "That is not an operator's token."
		if wantsHTML(r) {
			c.render(w, r, http.StatusUnauthorized, "login", &loginView{Next: next, Operator: named, Failed: true, Message: msg})
			return
		}
		c.fail(w, r, http.StatusUnauthorized, codeUnauthenticated, msg)
		return
	case err != nil:
		c.unavailable(w, r, err)
		return
	}
	c.limiter.succeeded(named)
	if ck, err := r.Cookie(c.cookieName()); err == nil {
		c.auth.end(ck.Value) // a login replaces the session it came with
	}
	id, s := c.auth.newSession(name, stored)
	http.SetCookie(w, &http.Cookie{
		Name:     c.cookieName(),
		Value:    id,
		Path:     "/",
		MaxAge:   int(c.cfg.SessionTTL.Seconds()),
		HttpOnly: true,
		Secure:   !c.cfg.InsecureHTTP,
		SameSite: http.SameSiteStrictMode,
	})
	c.cfg.Logger.InfoContext(r.Context(), "console: operator signed in", "operator", name, "client", addr)
	if wantsHTML(r) {
		if next == "" {
			next = "/"
		}
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"csrf_token": s.csrf, "operator": name})
}

// logout ends the session and expires its cookie.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if p := who(r); p.session != nil {
		c.auth.end(p.sessionID)
	}
	http.SetCookie(w, &http.Cookie{Name: c.cookieName(), Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		Secure: !c.cfg.InsecureHTTP, SameSite: http.SameSiteStrictMode})
	if wantsHTML(r) {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// localPath is p when it is a path on this console ("/keys?…"), else "": a login never sends a
// browser to another site (no "//host", no "/\host", no scheme).
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") ||
		strings.ContainsAny(p, "\r\n\t\\") {
		return ""
	}
	return p
}
