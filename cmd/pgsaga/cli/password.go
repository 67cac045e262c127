package cli

import (
	"net/url"
	"regexp"
	"strings"
)

// keywordPassword finds a password in a keyword/value connection string ("host=db password=x").
var keywordPassword = regexp.MustCompile(`(^|\s)password\s*=`)

// hasPassword reports whether a connection string carries a password: in a URL's user
// information (postgres://user:secret@host/db, several hosts included) or its password
// parameter, or as a keyword/value string's password.
func hasPassword(conn string) bool {
	scheme, rest, isURL := strings.Cut(conn, "://")
	if !isURL || (scheme != "postgres" && scheme != "postgresql") {
		return keywordPassword.MatchString(conn)
	}
	authority, query, _ := strings.Cut(rest, "?")
	authority, _, _ = strings.Cut(authority, "/")
	if at := strings.LastIndex(authority, "@"); at >= 0 && strings.Contains(authority[:at], ":") {
		return true
	}
	values, err := url.ParseQuery(query)
	return err == nil && values.Get("password") != ""
}
