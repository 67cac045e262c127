package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// envDatabaseURL is the environment variable --database-url defaults to.
const envDatabaseURL = "DATABASE_URL"

// Env is what the commands read from their environment. The cli package reads nothing from the
// process itself except through Main.
type Env struct {
	// Stdout receives the commands' output. Defaults to io.Discard.
	Stdout io.Writer
	// Stderr receives errors, progress and logs. Defaults to io.Discard.
	Stderr io.Writer
	// Getenv looks up environment variables (DATABASE_URL). Defaults to finding none.
	Getenv func(string) string
}

func (e *Env) withDefaults() *Env {
	out := Env{}
	if e != nil {
		out = *e
	}
	if out.Stdout == nil {
		out.Stdout = io.Discard
	}
	if out.Stderr == nil {
		out.Stderr = io.Discard
	}
	if out.Getenv == nil {
		out.Getenv = func(string) string { return "" }
	}
	return &out
}

// Main runs the command line in os.Args with the process's stdout, stderr and environment,
// and returns the exit status (ExitOK, ExitFailure or ExitUsage). A program's main is
// `os.Exit(cli.Main(app))`.
func Main(app *App) int {
	return Run(context.Background(), app, os.Args[1:], &Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
}

// Run runs one command line (args without the program name) and returns its exit status. An
// error is printed to env.Stderr as one line: "<name> <command>: <message>".
func Run(ctx context.Context, app *App, args []string, env *Env) int {
	env = env.withDefaults()
	root, c := newRoot(app, env)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		err = c.helpRefused
	}
	if err != nil {
		name := root.Name()
		if cmd != nil {
			name = cmd.CommandPath()
		}
		if c.pooling != poolingTransaction && sessionStateLost(err) {
			err = errTransactionPooler
		}
		msg := visible(oneLine(err.Error()))
		if exitCode(err) == ExitUsage {
			msg += fmt.Sprintf(" (see %s --help)", name)
		}
		fmt.Fprintf(env.Stderr, "%s: %s\n", name, msg)
	}
	return exitCode(err)
}

// NewRootCommand returns the command tree for app, writing to the process's stdout and stderr
// and reading DATABASE_URL from the process's environment. Execute it yourself, or use Main,
// which also maps errors to exit codes and prints them on one line.
func NewRootCommand(app *App) *cobra.Command {
	root, _ := newRoot(app, &Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
	return root
}

// cli is one command tree's shared state: the app, the environment and the global flags.
type cli struct {
	app             *App
	env             *Env
	databaseURL     string
	databaseURLFile string // --database-url-file
	pooling         string // --database-pooling
	// warnedPassword is set once the warning about a password on the command line is printed.
	warnedPassword bool
	logLevel       string
	// tracing is the running command's tracing (startTracing); nil when off. The pools the
	// command opens trace their statements with it, and the service it builds its operations.
	tracing *tracing
	// helpRefused is the usage error of --help asked of an unknown command, which cobra would
	// answer with the root's help.
	helpRefused error
}

func newRoot(app *App, env *Env) (*cobra.Command, *cli) {
	c := &cli{app: app.withDefaults(), env: env.withDefaults()}
	root := &cobra.Command{
		Use:   c.app.Name,
		Short: "Exactly-once effects over at-least-once networks, on PostgreSQL",
		Long: c.app.Name + ` runs pgsaga's migrations, the service API, the recovery worker, and the
operator's tools for idempotency keys (list, show, resume, settle, gc).

Exit status: 0 on success, 1 on failure, 2 on bad usage (unknown command or flag, bad flag
value, missing required flag or argument, no database URL). Errors are one line on stderr.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// Any argument that is not a command is an unknown command (bad usage).
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		// Checked before any command runs, also those that log nothing.
		PersistentPreRunE: func(*cobra.Command, []string) error {
			_, err := c.logger(logOneShot)
			return err
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	help := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		// --help after an argument that is no command: bad usage, as without --help.
		if cmd == root && cmd.Flags().NArg() > 0 {
			c.helpRefused = usageErrorf("unknown command %q", cmd.Flags().Arg(0))
			return
		}
		help(cmd, args)
	})
	root.SetOut(c.env.Stdout)
	root.SetErr(c.env.Stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err: err} })
	root.PersistentFlags().StringVar(&c.databaseURL, "database-url", "", "PostgreSQL connection URL (default $"+envDatabaseURL+"); a password here shows in the process list: prefer --database-url-file or $"+envDatabaseURL)
	root.PersistentFlags().StringVar(&c.databaseURLFile, "database-url-file", "", "read the PostgreSQL connection URL from this file (instead of --database-url)")
	root.PersistentFlags().StringVar(&c.pooling, "database-pooling", "", "how --database-url reaches PostgreSQL: session (directly, or a pooler in session mode) or transaction (a pooler in transaction pooling mode, such as PgBouncer's pool_mode=transaction) (default $"+envDatabasePooling+", else session)")
	root.PersistentFlags().StringVar(&c.logLevel, "log-level", "", "log level on stderr: debug, info, warn, error or off (default: info for serve and worker, off otherwise)")

	root.AddCommand(
		c.migrateCmd(),
		c.serveCmd(),
		c.workerCmd(),
		c.keysCmd(),
		c.showCmd(),
		c.resumeCmd(),
		c.settleCmd(),
		c.gcCmd(),
		c.reconcileCmd(),
		c.consoleCmd(),
		c.apiKeyCmd(),
		c.operatorCmd(),
	)
	if c.app.Commands != nil {
		root.AddCommand(c.app.Commands(c.env)...)
	}
	return root, c
}

// Default log levels: long-running commands log their life on stderr; one-shot commands keep
// stderr for their one-line error.
const (
	logDaemon  = "info"
	logOneShot = "off"
)

// logger is the commands' logger: text on stderr at --log-level, else at def.
func (c *cli) logger(def string) (*slog.Logger, error) {
	name := c.logLevel
	if name == "" {
		name = def
	}
	if name == "off" {
		return slog.New(slog.DiscardHandler), nil
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(name)); err != nil {
		return nil, usageErrorf("invalid --log-level %q: want debug, info, warn, error or off", c.logLevel)
	}
	return slog.New(requestIDHandler{slog.NewTextHandler(c.env.Stderr, &slog.HandlerOptions{Level: level})}), nil
}

// dbURL is the database URL as --database-pooling needs it opened (see withPooling): from
// --database-url, else the file --database-url-file names, else $DATABASE_URL; without any the
// command line is incomplete. A password given in --database-url itself is taken, with a
// warning on stderr: any user of the machine reads it in the process list.
func (c *cli) dbURL() (string, error) {
	u, err := c.rawDatabaseURL()
	if err != nil {
		return "", err
	}
	pooling, err := c.databasePooling()
	if err != nil {
		return "", err
	}
	return withPooling(u, pooling)
}

func (c *cli) rawDatabaseURL() (string, error) {
	flag, file := strings.TrimSpace(c.databaseURL), strings.TrimSpace(c.databaseURLFile)
	switch {
	case flag != "" && file != "":
		return "", usageErrorf("give --database-url or --database-url-file, not both")
	case flag != "":
		c.warnPassword("--database-url", flag)
		return flag, nil
	case file != "":
		return readURLFile(file)
	}
	if u := strings.TrimSpace(c.env.Getenv(envDatabaseURL)); u != "" {
		return u, nil
	}
	return "", usageErrorf("no database: set --database-url, --database-url-file or %s", envDatabaseURL)
}

// maxURLFile bounds what --database-url-file reads: a URL, not a file that merely sits there.
const maxURLFile = 64 << 10

// readURLFile is the URL in the file at path: its text, white space around it trimmed.
func readURLFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", usageErrorf("cannot read --database-url-file: %v", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxURLFile+1))
	switch {
	case err != nil:
		return "", usageErrorf("cannot read --database-url-file %s: %v", path, err)
	case len(b) > maxURLFile:
		return "", usageErrorf("--database-url-file %s is over 64 KiB: it should hold one URL", path)
	}
	u := strings.TrimSpace(string(b))
	if u == "" {
		return "", usageErrorf("--database-url-file %s is empty", path)
	}
	return u, nil
}

// warnPassword prints a warning on stderr when the URL given in flag carries a password, once a
// command run.
func (c *cli) warnPassword(flag, url string) {
	if c.warnedPassword || !hasPassword(url) {
		return
	}
	c.warnedPassword = true
	fmt.Fprintf(c.env.Stderr, "%s: warning: %s carries a password, which any user of this machine can read in the process list; "+
		"give the URL in $%s or --database-url-file instead\n", c.app.Name, flag, envDatabaseURL)
}

// exactArgs is cobra.ExactArgs with a bad-usage error naming what is missing.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < n {
			return usageErrorf("missing %s", what)
		}
		if len(args) > n {
			return usageErrorf("unexpected argument %q", args[n])
		}
		return nil
	}
}

// NoArgs refuses positional arguments as bad usage (exit 2), for a command that takes none;
// an application's own commands (App.Commands) use it too.
func NoArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unexpected argument %q", args[0])
	}
	return nil
}

// required refuses an empty required flag as bad usage; pairs are flag name, value, ….
func required(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return usageErrorf("required flag --%s not set", pairs[i])
		}
	}
	return nil
}
