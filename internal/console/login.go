package console

import (
	"context"
	"errors"
	"net/http"
	"strings"
)

var (
	errBodyTooLarge = errors.New("the body is over 64 KiB")
	errBadJSON      = errors.New("the body is not a JSON object")
)

func contextWith(r *http.Request, p *principal) context.Context {
	return context.WithValue(r.Context(), principalKey{}, p)
}

// loginView is the login page's data.
type loginView struct {
	Next    string
	Failed  bool
	Message string
}

// loginPage shows the login form.
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "login", &loginView{Next: localPath(r.URL.Query().Get("next"))})
}

// login trades the token (form field "token") for a session cookie: HttpOnly (no script reads
// it), SameSite=Strict (no other site's page makes the browser send it), Secure over TLS, for
// the session's lifetime. A browser is sent on (303); a script gets the session's CSRF token.
// It needs no CSRF token: a forged login would need the token itself.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if err := parseForm(r); err != nil {
		c.fail(w, r, http.StatusBadRequest, codeInvalidRequest, "The login form could not be read: "+err.Error())
		return
	}
	next := localPath(r.PostForm.Get("next"))
	if !c.auth.tokenOK(r.PostForm.Get("token")) {
		if wantsHTML(r) {
			c.render(w, r, http.StatusUnauthorized, "login", &loginView{Next: next, Failed: true,
				Message: "That is not the console's token."})
			return
		}
		c.fail(w, r, http.StatusUnauthorized, codeUnauthenticated, "That is not the console's token.")
		return
	}
	if ck, err := r.Cookie(sessionCookie); err == nil {
		c.auth.end(ck.Value) // a login replaces the session it came with
	}
	id, s := c.auth.newSession()
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookie,
		Value:    id,
		Path:     "/",
		MaxAge:   int(c.cfg.SessionTTL.Seconds()),
		HttpOnly: true,
		Secure:   secureCookie(r),
		SameSite: http.SameSiteStrictMode,
	})
	c.cfg.Logger.InfoContext(r.Context(), "console: operator logged in", "remote", r.RemoteAddr)
	if wantsHTML(r) {
		if next == "" {
			next = "/"
		}
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"csrf_token": s.csrf})
}

// logout ends the session and expires its cookie.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if p := who(r); p.session != nil {
		c.auth.end(p.sessionID)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		Secure: secureCookie(r), SameSite: http.SameSiteStrictMode})
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
