package console

import (
	"context"
	"crypto/sha256"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"riverqueue.com/riverui"

	"github.com/pgsaga/pgsaga/cmd/internal/clientaddr"
	"github.com/pgsaga/pgsaga/cmd/internal/refusal"
	"github.com/pgsaga/pgsaga/internal/operator"
	"github.com/pgsaga/pgsaga/saga"
)

// MinTokenLength is the shortest Config.Token the console takes: 32 bytes, as many as the
// random bytes of a token `pgsaga operator add` makes.
const MinTokenLength = 32

// Config configures a Console.
type Config struct {
	// Client reads keys through the engine's read API and runs Resume and Settle. It must hold
	// the application's operations (a key of an operation it does not know can be read, not
	// resumed or settled). Required.
	Client *saga.Client
	// River is the River client riverui reads jobs and queues through; an insert-only client is
	// enough. Defaults to nil: /river/ is not served.
	River *river.Client[pgx.Tx]
	// Operators are the operators kept in the database (`pgsaga operator`): each signs in with
	// their own token, is recorded by name in the keys' history, and is checked on every
	// request, so a revoke ends their sessions at once. Defaults to nil: only Token's operator.
	Operators *operator.Store
	// Token is one more operator's token, outside the database (PGSAGA_CONSOLE_TOKEN), named
	// TokenOperator; at least MinTokenLength bytes. A request carries a token as a Bearer
	// token, or a login trades it for a session cookie. Defaults to none. Operators or Token is
	// required.
	Token string
	// TokenOperator is the name Token's operator is recorded under. Defaults to "admin".
	TokenOperator string
	// InsecureHTTP is for a console served over plain HTTP (on a loopback address): the session
	// cookie is then neither Secure nor __Host- prefixed, or the browser would never send it
	// back. Defaults to false: the cookie is "__Host-pgsaga_console", Secure, for a console
	// reached over TLS (directly or through a proxy).
	InsecureHTTP bool
	// Name names the application in page titles. Defaults to "pgsaga".
	Name string
	// Logger receives the console's errors (never a token or a request body). Defaults to
	// discarding.
	Logger *slog.Logger
	// Registerer receives the console's metrics: refused sign-ins in
	// pgsaga_auth_failures_total{surface="console",reason}. Defaults to none.
	Registerer prometheus.Registerer
	// ClientAddr is the address a request comes from, without its port: what sign-ins are
	// throttled by and logged with. Behind a reverse proxy, give the client the proxy names
	// (clientaddr.Resolver.Of with the proxies trusted), or every client has the proxy's address
	// and one client's failures lock out all. Defaults to the TCP peer's address.
	ClientAddr func(r *http.Request) string
	// SessionTTL is how long a login lasts, from the login. Defaults to 12h.
	SessionTTL time.Duration
	// SessionIdle ends a session that makes no request for this long. Defaults to 1h.
	SessionIdle time.Duration
	// MaxFailedSignIns is how many failed sign-ins (a login or a Bearer request with a wrong
	// token) one client address (ClientAddr) may make within SignInWindow; further attempts from it, a right token
	// included, are answered 429 too_many_attempts until the window passes. Defaults to 10.
	MaxFailedSignIns int
	// SignInWindow is the window of MaxFailedSignIns. Defaults to 1m.
	SignInWindow time.Duration
	// MaxSessions caps the sessions kept in memory; a login beyond it ends the oldest.
	// Defaults to 1000.
	MaxSessions int
	// PageSize is how many keys a list page shows. Defaults to 50.
	PageSize int
	// Now is the clock of sessions, sign-in limits and flash messages. Defaults to time.Now.
	Now func() time.Time
}

// WithDefaults returns a copy of cfg with every default applied.
func (cfg *Config) WithDefaults() *Config {
	out := Config{}
	if cfg != nil {
		out = *cfg
	}
	if out.Name == "" {
		out.Name = "pgsaga"
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	if out.TokenOperator == "" {
		out.TokenOperator = "admin"
	}
	if out.SessionTTL == 0 {
		out.SessionTTL = 12 * time.Hour
	}
	if out.SessionIdle == 0 {
		out.SessionIdle = time.Hour
	}
	if out.MaxFailedSignIns == 0 {
		out.MaxFailedSignIns = 10
	}
	if out.SignInWindow == 0 {
		out.SignInWindow = time.Minute
	}
	if out.MaxSessions == 0 {
		out.MaxSessions = 1000
	}
	if out.PageSize == 0 {
		out.PageSize = 50
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	if out.ClientAddr == nil {
		out.ClientAddr = (*clientaddr.Resolver)(nil).Of
	}
	return &out
}

func (cfg *Config) validate() error {
	switch {
	case cfg.Client == nil:
		return errors.New("console: Config.Client is required")
	case cfg.Token == "" && cfg.Operators == nil:
		return errors.New("console: Config.Operators or Config.Token is required (without an operator nobody could sign in)")
	case cfg.Token != "" && len(cfg.Token) < MinTokenLength:
		return fmt.Errorf("console: Config.Token must be at least %d bytes, got %d", MinTokenLength, len(cfg.Token))
	case !operator.NameRule.MatchString(cfg.TokenOperator):
		return fmt.Errorf("console: Config.TokenOperator %q: %w", cfg.TokenOperator, operator.ErrInvalidName)
	case cfg.SessionTTL < time.Minute:
		return fmt.Errorf("console: Config.SessionTTL must be at least 1m, got %s", cfg.SessionTTL)
	case cfg.SessionIdle < time.Minute:
		return fmt.Errorf("console: Config.SessionIdle must be at least 1m, got %s", cfg.SessionIdle)
	case cfg.MaxFailedSignIns < 1:
		return fmt.Errorf("console: Config.MaxFailedSignIns must be positive, got %d", cfg.MaxFailedSignIns)
	case cfg.SignInWindow <= 0:
		return fmt.Errorf("console: Config.SignInWindow must be positive, got %s", cfg.SignInWindow)
	case cfg.MaxSessions < 1:
		return fmt.Errorf("console: Config.MaxSessions must be positive, got %d", cfg.MaxSessions)
	case cfg.PageSize < 1 || cfg.PageSize > 1000:
		return fmt.Errorf("console: Config.PageSize must be 1-1000, got %d", cfg.PageSize)
	}
	return nil
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Console is the operator console: an http.Handler serving the pages, their JSON twins, the
// login and riverui under /river/. Start it before serving when River is set.
type Console struct {
	cfg     *Config
	auth    *authenticator
	limiter *signInLimiter
	// refusals counts and logs (at a rate) the refused sign-ins.
	refusals *refusal.Recorder
	// tokenSum is Config.Token's SHA-256, nil without one.
	tokenSum []byte
	pages    map[string]*template.Template
	river    *riverui.Handler
	handler  http.Handler
	static   fs.FS
}

// New builds a console. It does not touch the database.
func New(cfg *Config) (*Console, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	pages, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, pages: pages, static: static,
		auth:    newAuthenticator(cfg.SessionTTL, cfg.SessionIdle, cfg.MaxSessions, cfg.Now),
		limiter: newSignInLimiter(cfg.MaxFailedSignIns, cfg.SignInWindow, cfg.Now)}
	if cfg.Token != "" {
		sum := sha256.Sum256([]byte(cfg.Token))
		c.tokenSum = sum[:]
	}
	if c.refusals, err = refusal.New(&refusal.Config{Logger: cfg.Logger, Registerer: cfg.Registerer, Now: cfg.Now}); err != nil {
		return nil, fmt.Errorf("error registering the console's metrics: %w", err)
	}
	if cfg.River != nil {
		c.river, err = riverui.NewHandler(&riverui.HandlerOpts{
			Endpoints: riverui.NewEndpoints(cfg.River, nil),
			Prefix:    riverPrefix,
			Logger:    cfg.Logger,
		})
		if err != nil {
			return nil, fmt.Errorf("error creating riverui: %w", err)
		}
	}
	c.handler = c.routes()
	return c, nil
}

// Start starts riverui's background services (its caches), which stop when ctx ends. Without
// Config.River it does nothing.
func (c *Console) Start(ctx context.Context) error {
	if c.river == nil {
		return nil
	}
	if err := c.river.Start(ctx); err != nil {
		return fmt.Errorf("error starting riverui: %w", err)
	}
	return nil
}

// ServeHTTP serves the console.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.handler.ServeHTTP(w, r) }

// riverPrefix is where riverui is mounted.
const riverPrefix = "/river"

// routes is the console's mux. Everything but the login page and the stylesheet needs
// authentication; every response carries the security headers.
func (c *Console) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticFiles(c.static)))
	mux.HandleFunc("GET /login", c.loginPage)
	mux.HandleFunc("POST /login", c.login)

	private := http.NewServeMux()
	private.HandleFunc("POST /logout", c.logout)
	private.HandleFunc("GET /{$}", c.overview)
	private.HandleFunc("GET /keys", c.keyList)
	private.HandleFunc("GET /charges/unmatched", c.unmatchedCharges)
	private.HandleFunc("GET /keys/{tenant}/{actor}/{key}", c.keyPage)
	private.HandleFunc("POST /keys/{tenant}/{actor}/{key}/resume", c.resume)
	private.HandleFunc("POST /keys/{tenant}/{actor}/{key}/settle", c.settle)
	if c.river != nil {
		// riverui's own API calls carry no CSRF token of ours: cross-origin protection (Fetch
		// metadata and Origin, on top of the SameSite=Strict cookie) refuses a state-changing
		// request another site made a browser send.
		private.Handle(riverPrefix+"/", http.NewCrossOriginProtection().Handler(c.river))
		private.Handle(riverPrefix, http.RedirectHandler(riverPrefix+"/", http.StatusMovedPermanently))
	}
	private.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, http.StatusNotFound, codeNotFound, "There is no page at "+r.URL.Path+".")
	})
	mux.Handle("/", c.authenticate(private))
	return securityHeaders(mux)
}
