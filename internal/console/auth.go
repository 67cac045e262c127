package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Sessions. A login trades the token for a random session id (256 bits) that names a session
// kept in this process's memory, not for a signed cookie: a logout (or the session's expiry)
// ends it at once, on the server, and a copied cookie dies with it; the token never travels
// again after the login; the CSRF token lives beside the session, so nothing but the id is in
// the cookie. The price is that a restart of the console logs everyone out, which is fine for an
// operator's tool run as one process. The map is keyed by the id's SHA-256, so looking a cookie
// up compares digests, not the secret itself.

// sessionCookie is the session cookie's name.
const sessionCookie = "pgsaga_console"

// csrfField is the form field (or X-CSRF-Token header) that carries a session's CSRF token.
const csrfField = "csrf"

type session struct {
	csrf    string
	expires time.Time
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

// authenticator checks the token and keeps the sessions.
type authenticator struct {
	tokenSum [sha256.Size]byte
	ttl      time.Duration
	max      int
	now      func() time.Time

	mu       sync.Mutex
	sessions map[[sha256.Size]byte]*session
	seq      uint64
}

func newAuthenticator(token string, ttl time.Duration, max int, now func() time.Time) *authenticator {
	return &authenticator{tokenSum: sha256.Sum256([]byte(token)), ttl: ttl, max: max, now: now,
		sessions: map[[sha256.Size]byte]*session{}}
}

// tokenOK compares a presented token with the console's in constant time: both are hashed
// first, so neither the comparison nor its length leaks how much of a guess was right.
func (a *authenticator) tokenOK(presented string) bool {
	sum := sha256.Sum256([]byte(presented))
	return presented != "" && subtle.ConstantTimeCompare(sum[:], a.tokenSum[:]) == 1
}

// newSession starts a session and returns its id.
func (a *authenticator) newSession() (string, *session) {
	id, csrf := randomToken(), randomToken()
	now := a.now()
	s := &session{csrf: csrf, expires: now.Add(a.ttl), flashes: map[string]*flash{}}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	s.seq = a.seq
	for k, old := range a.sessions {
		if !now.Before(old.expires) {
			delete(a.sessions, k)
		}
	}
	for len(a.sessions) >= a.max {
		a.evictOldestLocked()
	}
	a.sessions[sha256.Sum256([]byte(id))] = s
	return id, s
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

// lookup returns the live session named by id, or nil.
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
	if !a.now().Before(s.expires) {
		delete(a.sessions, key)
		return nil
	}
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

// principal is who a request is authenticated as: a Bearer token (no session) or a session.
type principal struct {
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

// authenticate lets a request through with a valid Bearer token or session cookie. Without
// either a browser is sent to the login page (303) and a script gets 401. A state-changing
// request of a cookie session must carry the session's CSRF token (403 otherwise); riverui's
// API is guarded by cross-origin protection instead (see routes). A Bearer request needs no
// CSRF token: a browser never adds that header on its own.
func (c *Console) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := c.principal(r)
		if !ok {
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

// principal authenticates r. A request that presents a Bearer token is judged by it alone.
func (c *Console) principal(r *http.Request) (*principal, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, _ := strings.Cut(h, " ")
		return &principal{}, strings.EqualFold(scheme, "Bearer") && c.auth.tokenOK(strings.TrimSpace(token))
	}
	if ck, err := r.Cookie(sessionCookie); err == nil {
		if s := c.auth.lookup(ck.Value); s != nil {
			return &principal{session: s, sessionID: ck.Value}, true
		}
	}
	return nil, false
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
	c.fail(w, r, http.StatusUnauthorized, codeUnauthenticated, "Authenticate with Authorization: Bearer <token>, or log in at /login.")
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
			return err
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
	return r.ParseForm()
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// secureCookie reports whether the session cookie must be Secure: the console is served over
// TLS, directly or behind a proxy that says so.
func secureCookie(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}
