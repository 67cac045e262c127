package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"riverqueue.com/riverui"

	"github.com/pgsaga/pgsaga/saga"
)

// By is who the console's actions are recorded as in a key's history (CONTRACT.md).
const By = "console"

// Config configures a Console.
type Config struct {
	// Client reads keys through the engine's read API and runs Resume and Settle. It must hold
	// the application's operations (a key of an operation it does not know can be read, not
	// resumed or settled). Required.
	Client *saga.Client
	// River is the River client riverui reads jobs and queues through; an insert-only client is
	// enough. Defaults to nil: /river/ is not served.
	River *river.Client[pgx.Tx]
	// Token is the operators' shared secret: a request carries it as a Bearer token, or a login
	// trades it for a session cookie. Required: an empty token would let anyone in.
	Token string
	// Name names the application in page titles. Defaults to "pgsaga".
	Name string
	// Logger receives the console's errors (never a token or a request body). Defaults to
	// discarding.
	Logger *slog.Logger
	// SessionTTL is how long a login lasts, from the login. Defaults to 12h.
	SessionTTL time.Duration
	// MaxSessions caps the sessions kept in memory; a login beyond it ends the oldest.
	// Defaults to 1000.
	MaxSessions int
	// PageSize is how many keys a list page shows. Defaults to 50.
	PageSize int
	// Now is the clock of sessions and flash messages. Defaults to time.Now.
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
	if out.SessionTTL == 0 {
		out.SessionTTL = 12 * time.Hour
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
	return &out
}

func (cfg *Config) validate() error {
	switch {
	case cfg.Client == nil:
		return errors.New("console: Config.Client is required")
	case cfg.Token == "":
		return errors.New("console: Config.Token is required (an empty token would let anyone in)")
	case cfg.SessionTTL < time.Minute:
		return fmt.Errorf("console: Config.SessionTTL must be at least 1m, got %s", cfg.SessionTTL)
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
	pages   map[string]*template.Template
	river   *riverui.Handler
	handler http.Handler
	static  fs.FS
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
		auth: newAuthenticator(cfg.Token, cfg.SessionTTL, cfg.MaxSessions, cfg.Now)}
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
