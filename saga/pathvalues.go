package saga

import (
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// pathValues are the wildcards of the pattern that routed r (http.Request.Pattern, set by
// Go's ServeMux) and their values, or nil when r was routed by no pattern or one without
// wildcards. The handler keeps them with the key (Request.PathValues), since a resume has no
// request to ask. A value the key table cannot store (invalid UTF-8, a NUL) is kept in its
// escaped form (%00, %FF), which names no row: the operation answers it like any unknown id.
func pathValues(r *http.Request) map[string]string {
	names := wildcards(r.Pattern)
	if len(names) == 0 {
		return nil
	}
	values := make(map[string]string, len(names))
	for _, name := range names {
		value := r.PathValue(name)
		if !canStore(value) {
			value = url.PathEscape(value)
		}
		values[name] = value
	}
	return values
}

// requestPath is r's path as the key stores it: in its escaped form (%00, %FF) when the
// decoded path is not text the key table can store.
func requestPath(r *http.Request) string {
	if !canStore(r.URL.Path) {
		return r.URL.EscapedPath()
	}
	return r.URL.Path
}

// canStore reports whether the key table can store s as text: valid UTF-8 without NUL.
func canStore(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// wildcards are the names of the wildcards of a ServeMux pattern, "[METHOD ][HOST]/[PATH]":
// "{name}" and "{name...}" name one; "{$}" (the end of the path) names none.
func wildcards(pattern string) []string {
	var names []string
	for {
		open := strings.IndexByte(pattern, '{')
		if open < 0 {
			return names
		}
		end := strings.IndexByte(pattern[open:], '}')
		if end < 0 {
			return names
		}
		name := strings.TrimSuffix(pattern[open+1:open+end], "...")
		if name != "" && name != "$" {
			names = append(names, name)
		}
		pattern = pattern[open+end+1:]
	}
}
