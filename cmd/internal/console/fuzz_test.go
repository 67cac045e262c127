package console_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// FuzzKeyListQuery: whatever the query parameters of the key list, and whatever the parts of a
// key page's path, the console answers 200 or a 4xx for people or scripts: never a 500, never a
// panic. The database is real, with keys of every state in it.
func FuzzKeyListQuery(f *testing.F) {
	e := newEnv(f, &envOpts{noRiver: true, pageSize: 2})
	inv, invKey := e.invoice(alice, 10000)
	e.payment(alice, inv, 1000, http.StatusCreated)
	e.parkedPayment(alice)
	e.stuckPayment(alice)
	first := e.getJSON("/keys?limit=2")
	cursor, _ := first["next_cursor"].(string)

	f.Add("", "", "", "", "", "")
	f.Add("failed", "create_payment", "tenant-1", "1", invKey[:10], "")
	f.Add("started", "", "", "true", "", cursor)
	f.Add("completed", "create_invoice", "tenant-1", "0", invKey, cursor)
	f.Add("bogus", "x\x00y", "\xff", "maybe", "%", "not-a-cursor")
	f.Add("", "", "", "", "", "eyJjIjoiMjAyMC0wMS0wMVQwMDowMDowMFoiLCJrIjoiXHUwMDAwIn0")
	f.Add("", "", "", "", "", "eyJjIjoiOTk5OS0xMi0zMVQyMzo1OTo1OVoiLCJrIjoieCIsInQiOiJcdWQ4MDAifQ")
	f.Add("", "", "", "", "", "bnVsbA")
	f.Add("", "", "..", "", "../..", "")
	f.Fuzz(func(t *testing.T, state, operation, tenant, stuck, q, cursor string) {
		query := url.Values{"state": {state}, "operation": {operation}, "tenant": {tenant}, "stuck": {stuck}, "q": {q}, "cursor": {cursor}}
		for _, path := range []string{
			"/keys?" + query.Encode(),
			"/keys/" + url.PathEscape(tenant) + "/" + url.PathEscape(operation) + "/" + url.PathEscape(q),
		} {
			for _, accept := range []string{"application/json", browserAccept} {
				r := httptest.NewRequest("GET", "http://console.test/", nil)
				r.URL, _ = url.Parse(path)
				if r.URL == nil {
					continue
				}
				r.RequestURI = path
				r.Header.Set("Authorization", "Bearer "+token)
				r.Header.Set("Accept", accept)
				w := httptest.NewRecorder()
				e.handler.ServeHTTP(w, r)
				switch w.Code {
				case http.StatusOK, http.StatusBadRequest, http.StatusNotFound,
					http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
				default:
					t.Fatalf("%s (%s): %d %s", path, accept, w.Code, w.Body)
				}
				if redirect := w.Code >= 300 && w.Code < 400; accept == "application/json" && !redirect && !json.Valid(w.Body.Bytes()) {
					t.Fatalf("%s: not JSON: %s", path, w.Body)
				}
			}
		}
	})
}
