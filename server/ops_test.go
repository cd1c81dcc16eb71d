package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// TestReadyzAndDegradedServing follows a server through start-up, a good
// load, and a database outage.
func TestReadyzAndDegradedServing(t *testing.T) {
	snap := k3sSnapshot(t)
	var fail atomic.Bool
	s, err := New(Options{Load: func(context.Context) (*snapshot.Snapshot, error) {
		if fail.Load() {
			return nil, fmt.Errorf("%w: dial 127.0.0.1:5432: connection refused", resolver.ErrUnavailable)
		}
		return snap, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(validating(t, s.Handler()))
	defer ts.Close()

	expect := func(path string, status int, bodyHas string) {
		t.Helper()
		res, body := get(t, ts, path)
		if res.StatusCode != status || !strings.Contains(string(body), bodyHas) {
			t.Errorf("GET %s: %d %q, want %d containing %q", path, res.StatusCode, body, status, bodyHas)
		}
	}
	expect("/healthz", 200, "ok")
	expect("/readyz", 503, "no snapshot")
	expect("/v1-release/channels/stable", 503, "ServiceUnavailable")
	expect("/api/v1/channels", 503, "urn:tidemark:problem:unavailable")

	if err := s.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	expect("/readyz", 200, "ok")
	expect("/v1-release/channels/stable", 302, "v1.21.2+k3s1")

	fail.Store(true)
	if err := s.Reload(context.Background()); !errors.Is(err, resolver.ErrUnavailable) {
		t.Fatalf("Reload with the database gone: %v, want ErrUnavailable", err)
	}
	expect("/readyz", 200, "degraded: unavailable: dial 127.0.0.1:5432: connection refused")
	expect("/v1-release/channels/stable", 302, "v1.21.2+k3s1")
	expect("/api/v1/resolve?source=k3s&current=v1.33.0-k3s1", 200, "v1.33.6+k3s2")
	expect("/api/v1/channels/stable/pin", 405, "GET is not allowed on /api/v1/channels/stable/pin") // GET of a write route
	expect("/api/v1/webhooks/nope", 404, "no route GET /api/v1/webhooks/nope; every route is in /openapi.yaml")
	req, _ := http.NewRequest(http.MethodPut, ts.URL+"/api/v1/channels/stable/pin", strings.NewReader(`{"version":"v1.33.6+k3s2"}`))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 503 || res.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("PUT pin: %d %s, want 503 problem+json", res.StatusCode, res.Header.Get("Content-Type"))
	}

	fail.Store(false)
	if err := s.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	expect("/readyz", 200, "ok")
}

func TestResolveParameters(t *testing.T) {
	_, ts, _ := newTestServer(t, k3sSnapshot(t), "")
	tests := []struct {
		name   string
		query  string
		status int
		param  string
	}{
		{"missing source is 400", "current=v1.33.0-k3s1", 400, "source"},
		{"missing current is 400", "source=k3s", 400, "current"},
		{"unknown stream is 400", "source=k3s&current=v1.33.0-k3s1&stream=nightly", 400, "stream"},
		{"stream and channel is 400", "source=k3s&current=v1.33.0-k3s1&stream=released&channel=latest", 400, "stream"},
		{"bad builds is 400", "source=k3s&current=v1.33.0-k3s1&builds=maybe", 400, "builds"},
		{"unknown source is 404 naming source", "source=nope&current=v1.33.0-k3s1", 404, "source"},
		{"unparseable current is 400 naming current", "source=k3s&current=v1.33", 400, "current"},
		{"raw plus in current is 400 naming current", "source=k3s&current=v1.33.6+k3s1", 400, "current"},
		{"unknown target is 404 naming target", "source=k3s&current=v1.33.0-k3s1&target=v1.33.99-k3s1", 404, "target"},
		{"channel of another source is 400 naming channel", "source=other&current=v1.33.0-k3s1&channel=v1.33", 400, "channel"},
		{"downgrade target is 422", "source=k3s&current=v1.33.0-k3s1&target=v1.32.9-k3s1", 422, ""},
		{"skipping a minor is 422", "source=k3s&current=v1.31.0-k3s1&target=v1.33.6%2Bk3s2", 422, ""},
		{"unknown parameters are ignored", "source=k3s&current=v1.33.0-k3s1&colour=blue", 200, ""},
		{"empty stream and builds are unset", "source=k3s&current=v1.33.0-k3s1&stream=&builds=", 200, ""},
		{"develop is devel", "source=k3s&current=v1.33.0-k3s1&stream=develop&builds=true", 200, ""},
		{"channel answers", "source=k3s&current=v1.33.0-k3s1&channel=v1.33", 200, ""},
		{"channel names its source", "current=v1.33.0-k3s1&channel=v1.33", 200, ""},
		{"unknown channel without source is 404 naming channel", "current=v1.33.0-k3s1&channel=nope", 404, "channel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, body := get(t, ts, "/api/v1/resolve?"+tt.query)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d; body %s", res.StatusCode, tt.status, body)
			}
			if tt.status == 200 {
				return
			}
			var p openapi.Problem
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatal(err)
			}
			if p.Param != tt.param || p.Status != tt.status || p.Detail == "" {
				t.Errorf("problem %+v, want status %d param %q and a detail", p, tt.status, tt.param)
			}
		})
	}
}

func TestMetricsCountRoutesAndSnapshot(t *testing.T) {
	_, ts, _ := newTestServer(t, k3sSnapshot(t), "")
	for range 3 {
		get(t, ts, "/v1-release/channels/latest")
	}
	get(t, ts, "/v1-release/channels/nope")
	get(t, ts, "/no/such/route")
	_, body := get(t, ts, "/metrics")
	for _, want := range []string{
		`tidemark_http_requests_total{code="302",method="GET",route="/v1-release/channels/:name"} 3`,
		`tidemark_http_requests_total{code="404",method="GET",route="/v1-release/channels/:name"} 1`,
		`tidemark_http_request_duration_seconds_count{route="/v1-release/channels/:name"} 4`,
		`tidemark_source_last_success_timestamp_seconds{source="k3s"} 1.777636742e+09`,
		"tidemark_snapshot_age_seconds ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestMetricsMethodLabelIsBounded: a client inventing methods must not
// create a series per method.
func TestMetricsMethodLabelIsBounded(t *testing.T) {
	_, ts, _ := newTestServer(t, k3sSnapshot(t), "")
	send := func(method string) {
		t.Helper()
		req, err := http.NewRequest(method, ts.URL+"/api/v1/channels", nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	series := func() []string {
		t.Helper()
		_, body := get(t, ts, "/metrics")
		var out []string
		for line := range strings.Lines(string(body)) {
			if strings.HasPrefix(line, "tidemark_http_requests_total{") && strings.Contains(line, `route="/api/v1/channels"`) {
				out = append(out, strings.TrimSpace(line))
			}
		}
		return out
	}
	send("FOO1")
	before := series()
	send("FOO2")
	send("get") // methods are case-sensitive: this is not GET
	after := series()
	if len(after) != len(before) {
		t.Errorf("request series grew from %d to %d with new methods: %q", len(before), len(after), after)
	}
	if want := `tidemark_http_requests_total{code="405",method="other",route="/api/v1/channels"} 3`; !slices.Contains(after, want) {
		t.Errorf("series %q lack %s", after, want)
	}
}

func TestOpenAPIIsServed(t *testing.T) {
	_, ts, _ := newTestServer(t, k3sSnapshot(t), "")
	res, body := get(t, ts, "/openapi.yaml")
	if res.StatusCode != 200 || !strings.HasPrefix(string(body), "openapi: 3.1") {
		t.Errorf("GET /openapi.yaml: %d %.40q", res.StatusCode, body)
	}
}

// TestServeDrainsInFlightRequests cancels Serve's context while a slow
// request runs: the request must complete and Serve return nil.
func TestServeDrainsInFlightRequests(t *testing.T) {
	s, err := New(Options{Load: func(context.Context) (*snapshot.Snapshot, error) { return k3sSnapshot(t), nil }})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	// A test-only route: nothing real is slow enough to catch in flight.
	s.echo.GET("/slow", func(c echo.Context) error {
		close(started)
		time.Sleep(300 * time.Millisecond)
		return c.String(http.StatusOK, "done")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()

	type result struct {
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		res, err := http.Get("http://" + ln.Addr().String() + "/slow")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		got <- result{string(b), err}
	}()
	<-started
	cancel()
	select {
	case err := <-served:
		t.Fatalf("Serve returned %v before the in-flight request finished", err)
	case <-time.After(50 * time.Millisecond):
	}
	r := <-got
	if r.err != nil || r.body != "done" {
		t.Fatalf("in-flight request: %q, %v; want it to complete with \"done\"", r.body, r.err)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after draining")
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Error("listener still accepts after shutdown")
	}
}
