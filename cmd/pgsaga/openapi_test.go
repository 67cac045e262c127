package main_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/require"
)

// The HTTP APIs' documents (docs/api/*.yaml, OpenAPI 3.1) checked against the real servers: a
// test sends each request through an apiClient, which checks the request against the document
// (a request a test breaks on purpose must break it), sends it to the running binary, and checks
// the response (its status documented for the operation, its headers and its body against their
// schemas). Each test then requires that every documented response of every operation was seen,
// but for the few it names with the reason, so that neither the document nor the test can fall
// behind the server.

// apiDocsDir holds the documents, from this package's directory.
var apiDocsDir = filepath.Join("..", "..", "docs", "api")

// apiSpec is one document, loaded and validated, and the responses the test has seen.
type apiSpec struct {
	t    *testing.T
	name string
	doc  *openapi3.T

	mu sync.Mutex
	// seen is operationId → status → whether a response with it was validated.
	seen map[string]map[int]bool
}

// loadSpec loads docs/api/<name>.yaml and checks it is a valid OpenAPI 3.1 document.
func loadSpec(t *testing.T, name string) *apiSpec {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile(filepath.Join(apiDocsDir, name+".yaml"))
	require.NoError(t, err, "loading %s.yaml", name)
	require.True(t, doc.IsOpenAPI31OrLater(), "%s.yaml is OpenAPI 3.1", name)
	require.NoError(t, doc.Validate(t.Context()), "%s.yaml is a valid document", name)
	return &apiSpec{t: t, name: name, doc: doc, seen: map[string]map[int]bool{}}
}

// operations lists every (method, path) of the document with its operation.
func (s *apiSpec) operations() map[string]*openapi3.Operation {
	out := map[string]*openapi3.Operation{}
	for path, item := range s.doc.Paths.Map() {
		for method, op := range item.Operations() {
			out[method+" "+path] = op
		}
	}
	return out
}

// client is an apiClient for the server at base (such as http://127.0.0.1:41234): the document's
// operations routed on that server, and a client that keeps cookies and follows no redirect.
func (s *apiSpec) client(base string) *apiClient {
	s.t.Helper()
	// A router matches the documented server's host: route this server's instead.
	doc := *s.doc
	doc.Servers = openapi3.Servers{{URL: base}}
	router, err := gorillamux.NewRouter(&doc)
	require.NoError(s.t, err)
	jar, err := cookiejar.New(nil)
	require.NoError(s.t, err)
	return &apiClient{spec: s, base: base, router: router, http: &http.Client{
		Timeout: 60 * time.Second,
		Jar:     jar,
		// The tests look at each redirect themselves.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

func (s *apiSpec) saw(operationID string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[operationID] == nil {
		s.seen[operationID] = map[int]bool{}
	}
	s.seen[operationID][status] = true
}

// requireCovered fails unless every documented response of every operation was seen, except
// those in unexercised ("operationId status" → why the test cannot make it), which must be
// documented responses that were not seen.
func (s *apiSpec) requireCovered(unexercised map[string]string) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var missing []string
	documented := map[string]bool{}
	for _, op := range s.operations() {
		for code := range op.Responses.Map() {
			status, err := strconv.Atoi(code)
			require.NoError(s.t, err, "%s: response %q is not a status code", op.OperationID, code)
			name := fmt.Sprintf("%s %d", op.OperationID, status)
			documented[name] = true
			_, excused := unexercised[name]
			switch {
			case s.seen[op.OperationID][status] && excused:
				s.t.Errorf("%s.yaml: %s is listed as not exercised, but the test saw it", s.name, name)
			case !s.seen[op.OperationID][status] && !excused:
				missing = append(missing, name)
			}
		}
	}
	for name := range unexercised {
		if !documented[name] {
			s.t.Errorf("%s.yaml: %s is listed as not exercised but is not documented", s.name, name)
		}
	}
	slices.Sort(missing)
	require.Empty(s.t, missing, "%s.yaml: documented responses no request of the test got", s.name)
}

// apiClient sends requests to one server and checks each exchange against the document.
type apiClient struct {
	spec   *apiSpec
	base   string
	router routers.Router
	http   *http.Client
}

// apiCall is one request.
type apiCall struct {
	Method string
	// Path is the path and query, such as "/payments?invoice_id=inv_1".
	Path   string
	Header map[string]string
	Body   string
	// Invalid says the request breaks the document on purpose (a missing key, a malformed
	// body, no credentials): its validation must fail. Its response must still be documented.
	Invalid bool
}

// apiAnswer is a response, read whole.
type apiAnswer struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends call and checks the request and the response against the document; it fails the
// test at the first mismatch.
func (c *apiClient) do(t *testing.T, call apiCall) apiAnswer {
	t.Helper()
	what := call.Method + " " + call.Path
	checked := c.request(t, call)
	// The cookies the client's jar adds to the request it sends.
	for _, ck := range c.http.Jar.Cookies(checked.URL) {
		checked.AddCookie(ck)
	}
	route, params, err := c.router.FindRoute(checked)
	require.NoError(t, err, "%s: no documented operation in %s.yaml", what, c.spec.name)
	input := &openapi3filter.RequestValidationInput{Request: checked, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: authenticated, RejectWhenRequestBodyNotSpecified: true}}
	err = openapi3filter.ValidateRequest(t.Context(), input)
	if call.Invalid {
		require.Error(t, err, "%s: the request breaks %s.yaml on purpose, but the document takes it", what, c.spec.name)
	} else {
		require.NoError(t, err, "%s: the request does not match %s.yaml", what, c.spec.name)
	}

	resp, err := c.http.Do(c.request(t, call))
	require.NoError(t, err, what)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err, what)

	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: input, Status: resp.StatusCode, Header: resp.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	out.SetBodyBytes(body)
	err = openapi3filter.ValidateResponse(t.Context(), out)
	require.NoError(t, err, "%s: the %d response does not match %s.yaml:\n%s", what, resp.StatusCode, c.spec.name, body)
	c.spec.saw(route.Operation.OperationID, resp.StatusCode)
	return apiAnswer{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// request builds call's request.
func (c *apiClient) request(t *testing.T, call apiCall) *http.Request {
	t.Helper()
	var body io.Reader = http.NoBody
	if call.Body != "" {
		body = strings.NewReader(call.Body)
	}
	req, err := http.NewRequestWithContext(t.Context(), call.Method, c.base+call.Path, body)
	require.NoError(t, err)
	for k, v := range call.Header {
		req.Header.Set(k, v)
	}
	if call.Body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// errNoCredentials is a security scheme a request does not satisfy.
var errNoCredentials = errors.New("no credentials for this scheme")

// authenticated checks that a request carries what a security scheme of the document asks
// for: the server checks the credentials themselves, the document only their form.
func authenticated(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	r, s := in.RequestValidationInput.Request, in.SecurityScheme
	switch {
	case s.Type == "http" && strings.EqualFold(s.Scheme, "bearer"):
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(token) != "" {
			return nil
		}
	case s.Type == "apiKey" && s.In == "header":
		if r.Header.Get(s.Name) != "" {
			return nil
		}
	case s.Type == "apiKey" && s.In == "cookie":
		if ck, err := r.Cookie(s.Name); err == nil && ck.Value != "" {
			return nil
		}
	default:
		return fmt.Errorf("security scheme %q of type %q is not one the tests know", in.SecuritySchemeName, s.Type)
	}
	return errNoCredentials
}

// requireError checks an answer is the JSON error with code.
func requireError(t *testing.T, a apiAnswer, status int, code string) {
	t.Helper()
	require.Equal(t, status, a.Status, string(a.Body))
	require.Equal(t, code, jsonString(t, a.Body, "error"), string(a.Body))
}

// jsonString is body's top-level string member name.
func jsonString(t *testing.T, body []byte, name string) string {
	t.Helper()
	raw := mustField(t, body, name)
	require.NotNil(t, raw, "%s has no %q", body, name)
	s, err := strconv.Unquote(string(raw))
	require.NoError(t, err, "%s: %q is not a string", body, name)
	return s
}
