package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

var (
	specOnce   sync.Once
	specDoc    *openapi3.T
	specRouter routers.Router
	specErr    error
)

// loadSpec parses openapi.yaml once per test binary.
func loadSpec(t *testing.T) (*openapi3.T, routers.Router) {
	t.Helper()
	specOnce.Do(func() {
		// The channel redirect's body is HTML; validate it as the string it is.
		openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
		specDoc, specErr = openapi3.NewLoader().LoadFromData(openapi.Spec)
		if specErr != nil {
			return
		}
		if specErr = specDoc.Validate(context.Background()); specErr != nil {
			return
		}
		specRouter, specErr = legacy.NewRouter(specDoc)
	})
	if specErr != nil {
		t.Fatalf("openapi.yaml: %v", specErr)
	}
	return specDoc, specRouter
}

// validating wraps h so that every response a test gets is checked against
// openapi.yaml: status documented, headers, content type and body schema. A
// response the spec does not describe fails the test that caused it.
func validating(t *testing.T, h http.Handler) http.Handler {
	_, router := loadSpec(t)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		res := rec.Result()
		body := rec.Body.Bytes()

		// HEAD is GET without the body (net/http drops it): the spec
		// documents GET, and a HEAD answer must match it but for the body.
		head := r.Method == http.MethodHead
		route, params, err := router.FindRoute(specRequest(r))
		switch {
		case err != nil && (res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusMethodNotAllowed):
			// An unknown route or method: nothing in the spec to check against.
		case err != nil:
			t.Errorf("spec drift: %s %s answered %d but is not in openapi.yaml: %v", r.Method, r.URL, res.StatusCode, err)
		default:
			checked := body
			if res.Header.Get("Content-Encoding") == "gzip" && !head {
				// The schema is about what the client reads.
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err == nil {
					checked, err = io.ReadAll(zr)
				}
				if err != nil {
					t.Errorf("%s %s: Content-Encoding gzip, but the body does not inflate: %v", r.Method, r.URL, err)
				}
			}
			in := &openapi3filter.ResponseValidationInput{
				RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route},
				Status:                 res.StatusCode,
				Header:                 res.Header,
				Body:                   io.NopCloser(bytes.NewReader(checked)),
				Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: head},
			}
			if err := openapi3filter.ValidateResponse(r.Context(), in); err != nil {
				t.Errorf("spec drift: %s %s -> %d %s\n%s\nbody: %.400s", r.Method, r.URL, res.StatusCode, res.Header.Get("Content-Type"), err, body)
			}
		}

		maps.Copy(w.Header(), res.Header)
		w.WriteHeader(res.StatusCode)
		_, _ = w.Write(body)
	})
}

// specRequest is r as the spec router needs it: a path with the version's
// "+" decoded the way the server decodes it.
func specRequest(r *http.Request) *http.Request {
	c := r.Clone(r.Context())
	c.URL.RawPath = ""
	if c.Method == http.MethodHead {
		c.Method = http.MethodGet
	}
	return c
}

// TestRoutesMatchSpec fails when a route is added without documenting it,
// or documented without being served.
func TestRoutesMatchSpec(t *testing.T) {
	doc, _ := loadSpec(t)
	s, err := New(Options{Load: func(context.Context) (*snapshot.Snapshot, error) { return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	var served, heads []string
	for _, r := range s.echo.Routes() {
		if r.Method == "echo_route_any" || strings.HasSuffix(r.Path, "/*") {
			continue
		}
		if r.Method == http.MethodHead {
			// Documented once, in the spec's description: HEAD goes with GET.
			heads = append(heads, "GET "+echoToSpecPath(r.Path))
			continue
		}
		served = append(served, r.Method+" "+echoToSpecPath(r.Path))
	}
	for _, r := range served {
		if strings.HasPrefix(r, "GET ") && !slices.Contains(heads, r) {
			t.Errorf("route %s is served without HEAD", r)
		}
	}
	var specified []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			specified = append(specified, method+" "+path)
		}
	}
	slices.Sort(served)
	slices.Sort(specified)
	for _, r := range served {
		if !slices.Contains(specified, r) {
			t.Errorf("route %s is served but not in openapi/openapi.yaml", r)
		}
	}
	for _, r := range specified {
		if !slices.Contains(served, r) {
			t.Errorf("openapi/openapi.yaml specifies %s but the server does not register it", r)
		}
	}
}

// echoToSpecPath turns echo's /a/:name into OpenAPI's /a/{name}.
func echoToSpecPath(p string) string {
	parts := strings.Split(p, "/")
	for i, part := range parts {
		if strings.HasPrefix(part, ":") {
			parts[i] = "{" + part[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

// TestValidatorCatchesDrift makes sure the validating wrapper can fail: a
// response shaped unlike the spec must be reported.
func TestValidatorCatchesDrift(t *testing.T) {
	_, router := loadSpec(t)
	r := httptest.NewRequest(http.MethodGet, "/api/v1/channels/stable", nil)
	route, params, err := router.FindRoute(r)
	if err != nil {
		t.Fatalf("FindRoute: %v", err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route},
		Status:                 http.StatusOK,
		Header:                 http.Header{"Content-Type": {"application/json"}, "Etag": {`"1"`}},
		Body:                   io.NopCloser(strings.NewReader(`{"name":"stable","pinned":"yes"}`)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err == nil {
		t.Fatal("a channel object with missing fields and a string pinned validated against the spec")
	}
}
