package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pgsaga/pgsaga/internal/operator"
)

// Sessions. A login trades an operator's token for a random session id (256 bits) that names a
// session kept in this process's memory, not for a signed cookie: a logout, the session's
// expiry (SessionTTL from the login, SessionIdle without a request) or the revocation of its
// operator ends it at once, on the server, and a copied cookie dies with it; the token never
// travels again after the login; the CSRF token lives beside the session, so nothing but the id
// is in the cookie. The price is that a restart of the console logs everyone out, which is fine
// for an operator's tool run as one process. The map is keyed by the id's SHA-256, so looking a
// cookie up compares digests, not the secret itself.

// Session cookie names: with the __Host- prefix the browser keeps the cookie only when it is
// Secure, for this host alone (no Domain) and the whole site (Path=/), so neither a sibling
// domain nor a plain-HTTP page can plant or overwrite it. Plain HTTP (Config.InsecureHTTP) can
// have neither.
const (
	sessionCookieSecure   = "__Host-pgsaga_console"
	sessionCookieInsecure = "pgsaga_console"
)

// csrfField is the form field (or X-CSRF-Token header) that carries a session's CSRF token.
const csrfField = "csrf"

type session struct {
	csrf string
	// operator is who signed in; stored says they are kept in the database (Config.Operators),
	// whose revocation ends the session, rather than the token of Config.Token.
	operator string
	stored   bool
	expires  time.Time
	lastSeen time.Time
	// seq orders sessions by login, for ending the oldest.
	seq uint64
	// flashes are one-shot messages for the key pages this session posted to, by page path.
	flashes map[string]*flash
}

// flash is the outcome of an action, shown once on the key's page after the 303.
type flash struct {
	OK      bool
	Message string
}

// authenticator keeps the sessions.
type authenticator struct {
	ttl  time.Duration
	idle time.Duration
	max  int
	now  func() time.Time

	mu       sync.Mutex
	sessions map[[sha256.Size]byte]*session
	seq      uint64
}

func newAuthenticator(ttl, idle time.Duration, max int, now func() time.Time) *authenticator {
	return &authenticator{ttl: ttl, idle: idle, max: max, now: now, sessions: map[[sha256.Size]byte]*session{}}
}

// newSession starts a session for operator and returns its id.
func (a *authenticator) newSession(operator string, stored bool) (string, *session) {
	id, csrf := randomToken(), randomToken()
	now := a.now()
	s := &session{csrf: csrf, operator: operator, stored: stored, expires: now.Add(a.ttl), lastSeen: now,
		flashes: map[string]*flash{}}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	s.seq = a.seq
	for k, old := range a.sessions {
		if a.overLocked(old, now) {
			delete(a.sessions, k)
		}
	}
	for len(a.sessions) >= a.max {
		a.evictOldestLocked()
	}
	a.sessions[sha256.Sum256([]byte(id))] = s
	return id, s
}

// overLocked reports whether s has ended: past its lifetime, or idle too long.
func (a *authenticator) overLocked(s *session, now time.Time) bool {
	return !now.Before(s.expires) || !now.Before(s.lastSeen.Add(a.idle))
}

func (a *authenticator) evictOldestLocked() {
	var oldest [sha256.Size]byte
	var first *session
	for k, s := range a.sessions {
		if first == nil || s.seq < first.seq {
			oldest, first = k, s
		}
	}
	delete(a.sessions, oldest)
}

// lookup returns the live session named by id, or nil, and counts this as its latest request.
func (a *authenticator) lookup(id string) *session {
	if id == "" {
		return nil
	}
	key := sha256.Sum256([]byte(id))
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[key]
	if s == nil {
		return nil
	}
	now := a.now()
	if a.overLocked(s, now) {
		delete(a.sessions, key)
		return nil
	}
	s.lastSeen = now
	return s
}

func (a *authenticator) end(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.sessions, sha256.Sum256([]byte(id)))
}

// setFlash leaves a message for the next view of page in session s.
func (a *authenticator) setFlash(s *session, page string, f *flash) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s.flashes[page] = f
}

// takeFlash returns and forgets page's message in session s.
func (a *authenticator) takeFlash(s *session, page string) *flash {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := s.flashes[page]
	delete(s.flashes, page)
	return f
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics if the system's source does)
	return base64.RawURLEncoding.EncodeToString(b)
}

// principal is who a request is authenticated as: an operator, by a Bearer token (no session)
// or a session.
type principal struct {
	operator  string
	session   *session
	sessionID string
}

type principalKey struct{}

// who returns the request's principal (set by authenticate).
func who(r *http.Request) *principal {
	p, _ := r.Context().Value(principalKey{}).(*principal)
	if p == nil {
		return &principal{}
	}
	return p
}

// errUnknownToken is a token no operator has.
var errUnknownToken = operator.ErrUnknownToken

// operatorOf returns the operator whose token this is, and whether they are kept in the
// database: Config.Token's operator (compared in constant time, both sides hashed, so neither
// the comparison nor its length tells how much of a guess was right), else an operator of
// Config.Operators (found by the token's digest). An unknown token is errUnknownToken; any
// other error is the database's.
func (c *Console) operatorOf(ctx context.Context, token string) (string, bool, error) {
	if token == "" {
		return "", false, errUnknownToken
	}
	if c.tokenSum != nil {
		sum := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(sum[:], c.tokenSum) == 1 {
			return c.cfg.TokenOperator, false, nil
		}
	}
	if c.cfg.Operators == nil {
		return "", false, errUnknownToken
	}
	name, err := c.cfg.Operators.Authenticate(ctx, token)
	if err != nil {
		return "", false, err
	}
	return name, true, nil
}

// authenticate lets a request through with a valid Bearer token or session cookie. Without
// either a browser is sent to the login page (303) and a script gets 401. A Bearer token is a
// sign-in: from an address with too many failures it is refused (429), a wrong one counts as
// a failure and is logged. A session's operator, when kept in the database, is checked on
// every request, so a revoke ends their sessions at once. A state-changing request of a cookie
// session must carry the session's CSRF token (403 otherwise); riverui's API is guarded by
// cross-origin protection instead (see routes). A Bearer request needs no CSRF token: a
// browser never adds that header on its own.
func (c *Console) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := c.principal(w, r)
		if !ok {
			return
		}
		if p == nil {
			c.unauthenticated(w, r)
			return
		}
		if p.session != nil && !safeMethod(r.Method) && !strings.HasPrefix(r.URL.Path, riverPrefix+"/") && !c.csrfOK(r, p.session) {
			c.fail(w, r, http.StatusForbidden, codeCSRF, "This form is missing its CSRF token or carries a stale one: reload the page and try again.")
			return
		}
		next.ServeHTTP(w, r.WithContext(contextWith(r, p)))
	})
}

// principal authenticates r. A request that presents a Bearer token is judged by it alone. It
// returns nil when r is not authenticated, and false when it has answered r itself (429, 503).
func (c *Console) principal(w http.ResponseWriter, r *http.Request) (*principal, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, _ := strings.Cut(h, " ")
		addr := c.cfg.ClientAddr(r)
		if wait, _ := c.limiter.blocked(addr, ""); wait > 0 {
			c.tooManyAttempts(w, r, addr, "", "bearer", wait)
			return nil, false
		}
		name, err := "", errUnknownToken
		if strings.EqualFold(scheme, "Bearer") {
			name, _, err = c.operatorOf(r.Context(), strings.TrimSpace(token))
		}
		switch {
		case errors.Is(err, errUnknownToken):
			c.signInFailed(r, addr, "", "bearer")
			return nil, true
		case err != nil:
			c.unavailable(w, r, err)
			return nil, false
		}
		return &principal{operator: name}, true
	}
	ck, err := r.Cookie(c.cookieName())
	if err != nil {
		return nil, true
	}
	s := c.auth.lookup(ck.Value)
	if s == nil {
		return nil, true
	}
	if s.stored {
		active, err := c.cfg.Operators.Active(r.Context(), s.operator)
		if err != nil {
			c.unavailable(w, r, err)
			return nil, false
		}
		if !active {
			c.auth.end(ck.Value)
			c.cfg.Logger.InfoContext(r.Context(), "console: session of a revoked operator ended", "operator", s.operator, "client", c.cfg.ClientAddr(r))
			return nil, true
		}
	}
	return &principal{operator: s.operator, session: s, sessionID: ck.Value}, true
}

// Reasons of a refused sign-in, as pgsaga_auth_failures_total{surface="console"} counts them.
const (
	// reasonUnknownToken: a token no operator has (or, by a form naming an operator, not theirs).
	reasonUnknownToken = "unknown_token"
	// reasonTooManyAttempts: refused unread while the address (or the name) is throttled.
	reasonTooManyAttempts = "too_many_attempts"
)

// signInFailed counts a failed sign-in from addr against the limiter and records it (counted,
// logged at a rate) by way ("form" or "bearer"). named is what a form typed as the operator's
// name: it is counted and logged only when it is an operator's, for a token typed into the
// name field must not reach the log.
func (c *Console) signInFailed(r *http.Request, addr, named, way string) {
	name := c.operatorName(r.Context(), named)
	c.limiter.failed(addr, name)
	attrs := []any{"via", way}
	if name != "" {
		attrs = append(attrs, "operator", name)
	}
	c.refusals.Refused(r.Context(), "console", reasonUnknownToken, addr, attrs...)
}

// operatorName is named when it names an operator who can sign in, else "".
func (c *Console) operatorName(ctx context.Context, named string) string {
	switch {
	case named == "":
		return ""
	case c.tokenSum != nil && named == c.cfg.TokenOperator:
		return named
	case c.cfg.Operators == nil:
		return ""
	}
	active, err := c.cfg.Operators.Active(ctx, named)
	if err != nil || !active {
		return ""
	}
	return named
}

// tooManyAttempts refuses a sign-in while its address or name is throttled: 429 with
// Retry-After, recorded. name is an operator's name the limiter has locked, or "".
func (c *Console) tooManyAttempts(w http.ResponseWriter, r *http.Request, addr, name, way string, wait time.Duration) {
	attrs := []any{"via", way, "retry_after", wait.Round(time.Second)}
	if name != "" {
		attrs = append(attrs, "operator", name)
	}
	c.refusals.Refused(r.Context(), "console", reasonTooManyAttempts, addr, attrs...)
	secs := max(int(math.Ceil(wait.Seconds())), 1)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	msg := fmt.Sprintf("Too many failed sign-ins: try again in %d seconds.", secs)
	if wantsHTML(r) && r.URL.Path == "/login" {
		c.render(w, r, http.StatusTooManyRequests, "login", &loginView{Next: localPath(r.PostForm.Get("next")), Failed: true, Message: msg})
		return
	}
	c.fail(w, r, http.StatusTooManyRequests, codeTooManyAttempts, msg)
}

// unavailable answers a request whose operator could not be checked: the database did not
// answer. Nothing is let through.
func (c *Console) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	c.cfg.Logger.ErrorContext(r.Context(), "console: checking an operator", "error", err)
	w.Header().Set("Retry-After", "1")
	c.fail(w, r, http.StatusServiceUnavailable, codeTemporarilyUnavailable, "The operators could not be checked now: try again in a moment.")
}

func (c *Console) unauthenticated(w http.ResponseWriter, r *http.Request) {
	if wantsHTML(r) {
		target := "/login"
		if r.Method == http.MethodGet && r.URL.Path != "/" {
			target += "?next=" + url.QueryEscape(r.URL.RequestURI())
		}
		http.Redirect(w, r, target, http.StatusSeeOther)
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="pgsaga console"`)
	c.fail(w, r, http.StatusUnauthorized, codeUnauthenticated, "Authenticate with Authorization: Bearer <operator token>, or log in at /login.")
}

// csrfOK checks the session's CSRF token in the form field or the X-CSRF-Token header.
func (c *Console) csrfOK(r *http.Request, s *session) bool {
	presented := r.Header.Get("X-CSRF-Token")
	if presented == "" {
		if err := parseForm(r); err == nil {
			presented = r.PostForm.Get(csrfField)
		}
	}
	return presented != "" && subtle.ConstantTimeCompare([]byte(presented), []byte(s.csrf)) == 1
}

// cookieName is the session cookie's name (see sessionCookieSecure).
func (c *Console) cookieName() string {
	if c.cfg.InsecureHTTP {
		return sessionCookieInsecure
	}
	return sessionCookieSecure
}

// maxFormBytes caps a form or JSON body: a note and a reference, not a file.
const maxFormBytes = 64 << 10

// parseForm reads r's body once: a form (urlencoded) into r.PostForm, or a JSON object of
// strings into r.PostForm as well, so handlers read one place.
func parseForm(r *http.Request) error {
	if r.PostForm != nil {
		return nil
	}
	ct := r.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/json") {
		r.PostForm = url.Values{}
		var fields map[string]any
		body, err := io.ReadAll(io.LimitReader(r.Body, maxFormBytes+1))
		if err != nil {
			return errBadForm
		}
		if len(body) > maxFormBytes {
			return errBodyTooLarge
		}
		if len(body) == 0 {
			return nil
		}
		if err := json.Unmarshal(body, &fields); err != nil {
			return errBadJSON
		}
		for k, v := range fields {
			if s, ok := v.(string); ok {
				r.PostForm.Set(k, s)
			}
		}
		return nil
	}
	r.Body = http.MaxBytesReader(nil, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return errBodyTooLarge
		}
		return errBadForm
	}
	return nil
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}
