package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pgsaga/pgsaga/internal/keyjson"
	"github.com/pgsaga/pgsaga/saga"
)

// The JSON shapes of keys (as `show --json` prints them) live in internal/keyjson, shared with the console.
type keyJSON = keyjson.Key

func renderKey(k *saga.Key) keyJSON { return keyjson.FromKey(k) }

func renderKeyDetail(k *saga.Key) keyjson.Detail { return keyjson.DetailFromKey(k) }

// renderResponse is a stored response as --json renders it: {"status","body"}.
func renderResponse(r *saga.Response) keyjson.Response { return *keyjson.FromResponse(r) }

// writeJSON writes v as one JSON document on one line.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// ago is how long before now t was, in one unit: "42s ago", "3m ago", "5h ago", "2d ago".
func ago(now, t time.Time) string {
	return roughDuration(now.Sub(t)) + " ago"
}

// lease describes a key's lease relative to now: "expires in 12s", "expired 42s ago", or
// "none" when the key has no lease.
func lease(now time.Time, k *saga.Key) string {
	if k.LockedUntil == nil {
		return "none"
	}
	if k.LockedUntil.After(now) {
		return "expires in " + roughDuration(k.LockedUntil.Sub(now))
	}
	return "expired " + ago(now, *k.LockedUntil)
}

// roughDuration rounds d down to its largest unit: 42s, 3m, 5h, 2d.
func roughDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
}

// statusLine is "201 Created".
func statusLine(status int) string {
	return strings.TrimSpace(fmt.Sprintf("%d %s", status, http.StatusText(status)))
}

// truncate shortens s to n runes for a table cell, on one line, its control characters escaped
// (see visible).
func truncate(s string, n int) string {
	s = visible(oneLine(s))
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// listing is how a list command (keys, apikey list, operator list) prints its items: with --json
// one document {"<name>":[…]} of each item's JSON (an empty array, never null); else a table of
// each item's row under header, or the line none when there are no items.
type listing[T, J any] struct {
	name   string
	json   func(T) J
	none   string
	header []string
	row    func(T) []string
}

func (l *listing[T, J]) print(c *cli, items []T, asJSON bool) error {
	if asJSON {
		out := make([]J, len(items))
		for i, item := range items {
			out[i] = l.json(item)
		}
		return writeJSON(c.env.Stdout, map[string][]J{l.name: out})
	}
	if len(items) == 0 {
		_, err := fmt.Fprintln(c.env.Stdout, l.none)
		return err
	}
	tw := tabwriter.NewWriter(c.env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(l.header, "\t"))
	for _, item := range items {
		fmt.Fprintln(tw, strings.Join(l.row(item), "\t"))
	}
	return tw.Flush()
}

// revokedAgo is the REVOKED column of `apikey list` and `operator list`: how long before now
// revokedAt was, or "-" while not revoked.
func revokedAgo(now time.Time, revokedAt *time.Time) string {
	if revokedAt == nil {
		return "-"
	}
	return ago(now, *revokedAt)
}

// printShownOnce prints a new credential (`apikey create`, `operator add`) as name-value rows,
// then note: its secret is not stored, so this is the only time it is shown.
func (c *cli) printShownOnce(note string, rows ...[2]string) error {
	tw := tabwriter.NewWriter(c.env.Stdout, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(c.env.Stdout, note)
	return err
}

// orDash is s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// visible renders s for a terminal: control and other invisible characters (ESC, CR, a
// bidirectional override, invalid UTF-8) as Go escapes (\x1b, \r, \u202e, \xff) and a backslash
// as \\, so that a stored value (a request path, a last error) can neither move the cursor,
// recolour nor rewrite the operator's screen, nor pass for another value. Printable text,
// spaces included, is kept as it is.
func visible(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == ' ' || unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			quoted := strconv.QuoteRune(r) // '\x1b', '\u202e', '\n'
			b.WriteString(quoted[1 : len(quoted)-1])
		}
		i += size
	}
	return b.String()
}

// visibleText is visible for text of several lines (a stored response body): line breaks and
// tabs are kept, every other control character is escaped.
func visibleText(s string) string {
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		cells := strings.Split(line, "\t")
		for j, cell := range cells {
			cells[j] = visible(cell)
		}
		lines[i] = strings.Join(cells, "\t")
	}
	return strings.Join(lines, "\n")
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '\\' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}
