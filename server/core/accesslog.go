package core

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tidemark-dev/tidemark/internal/logtext"
)

// Access log modes (the access_log setting).
const (
	// AccessLogSample, the default, logs every error and every write, and
	// one in accessSampleEvery of the other requests, each with
	// sample=accessSampleEvery. A line per channel request was the largest
	// single cost of the hot path: at tens of thousands of requests a
	// second it is tens of thousands of lines nobody reads one by one.
	AccessLogSample = "sample"
	AccessLogAll    = "all" // every request
	AccessLogOff    = "off" // errors only
)

const accessSampleEvery = 100

// accessLog decides which requests get a line.
type accessLog struct {
	mode string
	seen atomic.Uint64
}

func newAccessLog(mode string) (*accessLog, error) {
	switch mode {
	case "":
		mode = AccessLogSample
	case AccessLogSample, AccessLogAll, AccessLogOff:
	default:
		return nil, fmt.Errorf("access log %q: want all, sample or off", mode)
	}
	return &accessLog{mode: mode}, nil
}

// keep says whether the request gets a line, and how many requests that
// line stands for (1: itself alone). Errors (status >= 400) and writes are
// always logged.
func (a *accessLog) keep(method string, status int) (bool, int) {
	if status >= 400 || (method != http.MethodGet && method != http.MethodHead) {
		return true, 1
	}
	switch a.mode {
	case AccessLogAll:
		return true, 1
	case AccessLogOff:
		return false, 0
	}
	if a.seen.Add(1)%accessSampleEvery == 1 {
		return true, accessSampleEvery
	}
	return false, 0
}

// requestKey names the metric children of one kind of request.
type requestKey struct{ route, method, code string }

// bound are one kind of request's metric children, looked up once: the
// label lookup (validate, hash, lock) per request was the next cost.
type bound struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

func (m *metrics) children(route, method, code string) *bound {
	k := requestKey{route, method, code}
	if b, ok := m.bound.Load(k); ok {
		return b.(*bound)
	}
	b := &bound{requests: m.requests.WithLabelValues(route, method, code), latency: m.latency.WithLabelValues(route)}
	m.bound.Store(k, b)
	return b
}

// Observe is the one middleware: metrics and the access log. The
// system-upgrade-controller headers go into the log line so an operator can
// see which cluster asked and what it runs.
func (s *Server) Observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			// Render now so the status below is the one sent.
			c.Error(err)
		}
		req, res := c.Request(), c.Response()
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		d := time.Since(start)
		b := s.Metrics.children(route, methodLabel(req.Method), statusText(res.Status))
		b.requests.Inc()
		b.latency.Observe(d.Seconds())

		keep, sample := s.access.keep(req.Method, res.Status)
		ctx := req.Context()
		if !keep || !s.Log.Enabled(ctx, slog.LevelInfo) {
			return nil
		}
		attrs := make([]slog.Attr, 0, 10)
		attrs = append(attrs,
			slog.String("method", logtext.Cut(req.Method, 16)),
			slog.String("path", LogPath(req)),
			slog.Int("status", res.Status),
			slog.Int64("bytes", res.Size),
			slog.Duration("duration", d),
			slog.String("remote", req.RemoteAddr),
		)
		if ua := req.UserAgent(); ua != "" {
			if logtext.LooksLikeToken(ua) {
				ua = "***"
			}
			attrs = append(attrs, slog.String("user_agent", logtext.Cut(ua, maxLogUserAgent)))
		}
		if id := req.Header.Get("X-SUC-Cluster-ID"); id != "" {
			attrs = append(attrs, slog.String("suc_cluster_id", logValue(id)))
		}
		if v := req.Header.Get("X-SUC-Latest-Version"); v != "" {
			attrs = append(attrs, slog.String("suc_latest_version", logValue(v)))
		}
		if sample > 1 {
			attrs = append(attrs, slog.Int("sample", sample))
		}
		// A record without a caller PC: Logger.LogAttrs would walk the stack
		// for every request (runtime.Callers was 7% of the hot path) to
		// fill a source location the access log never shows.
		r := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
		r.AddAttrs(attrs...)
		_ = s.Log.Handler().Handle(ctx, r)
		return nil
	}
}

// Access-log field limits (CONTRACT section 12): a request's own bytes are
// cut so that one line stays under 4 KiB whatever the client sends.
const (
	maxLogPath      = 1 << 10
	maxLogUserAgent = 256
	maxLogHeader    = 128
)

// LogPath is the request's path and query as a log may show them: a
// Docker Hub webhook's secret path segment, the values of secretParams and
// any value or path segment that is a Tidemark token (tdm_...) are
// replaced by ***, and the whole is cut to maxLogPath. Every log line that
// names a request uses it.
func LogPath(r *http.Request) string {
	return logtext.Cut(redactedURI(r), maxLogPath)
}

func redactedURI(r *http.Request) string {
	p := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(p, DockerHubWebhookPrefix); ok && rest != "" {
		p = DockerHubWebhookPrefix + "***"
	}
	if strings.Contains(p, logtext.TokenPrefix) {
		segs := strings.Split(p, "/")
		for i, seg := range segs {
			if logtext.LooksLikeToken(seg) {
				segs[i] = "***"
			}
		}
		p = strings.Join(segs, "/")
	}
	if r.URL.RawQuery == "" {
		return p
	}
	return p + "?" + logtext.RedactQuery(r.URL.RawQuery)
}

// logValue is a header's value as a log may show it.
func logValue(v string) string {
	if logtext.LooksLikeToken(v) {
		return "***"
	}
	return logtext.Cut(v, maxLogHeader)
}

// DockerHubWebhookPrefix is followed by the Docker Hub webhook's secret:
// logs show it as ***.
const DockerHubWebhookPrefix = "/api/v1/webhooks/dockerhub/"
