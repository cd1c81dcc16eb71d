// Package registryhttp is the HTTP plumbing under every registry request
// the indexer makes: retries with backoff and Retry-After, the per-registry
// rate limit, the request count, bounded tag-list pages, and errors that
// say why a registry could not be reached. It knows nothing of sources or
// scans; package indexer chains these transports per source.
package registryhttp

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// The chain every registry request of a scan goes through, outermost first:
//
//	ggcr auth (ping, token, bearer refresh) -> retry -> rate limit -> counting -> base
//
// Retries happen in this package's retry layer only: the authenticated
// transport handed to ggcr is a *transport.Wrapper, which tells ggcr not to
// add its own retry layer, so nothing is retried twice. The limiter and the
// counter sit below the retry so that every attempt that reaches the
// registry waits for a token and is counted: a retried 429 is a request the
// registry saw, and politeness is about what the registry sees.

// RetryPolicy bounds retries. Fields are tuned down in tests.
type RetryPolicy struct {
	Attempts      int           // total attempts per request, first included
	Base          time.Duration // backoff before the 2nd attempt is drawn from [0, base)
	Max           time.Duration // cap of the exponential backoff
	MaxRetryAfter time.Duration // a longer Retry-After is shortened to this
	Timeout       time.Duration // per attempt, headers and body
}

var DefaultRetry = RetryPolicy{
	Attempts:      4,
	Base:          250 * time.Millisecond,
	Max:           8 * time.Second,
	MaxRetryAfter: 60 * time.Second,
	Timeout:       30 * time.Second,
}

type RetryTransport struct {
	Next   http.RoundTripper
	Policy RetryPolicy
}

func (t *RetryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// Only requests without a body are replayed; ggcr's token POST is not.
	idempotent := (req.Method == http.MethodGet || req.Method == http.MethodHead) && req.Body == nil
	attempts := t.Policy.Attempts
	if !idempotent || attempts < 1 {
		attempts = 1
	}
	for attempt := 1; ; attempt++ {
		resp, err := t.once(req)
		if attempt >= attempts || req.Context().Err() != nil {
			return resp, err
		}
		var wait time.Duration
		switch {
		case err != nil:
			if !Transient(err) {
				return nil, err
			}
			wait = t.Backoff(attempt)
		case resp.StatusCode == http.StatusTooManyRequests:
			wait = RetryAfter(resp.Header.Get("Retry-After"), time.Now())
			if wait < 0 {
				wait = t.Backoff(attempt)
			}
			wait = min(wait, t.Policy.MaxRetryAfter)
		case retryableStatus(resp.StatusCode):
			wait = t.Backoff(attempt)
		default:
			return resp, nil
		}
		if resp != nil {
			// Drain a little so the connection can be reused, then let it go.
			_, _ = io.CopyN(io.Discard, resp.Body, 4096)
			resp.Body.Close()
		}
		timer := time.NewTimer(wait)
		select {
		case <-req.Context().Done():
			timer.Stop()
			return nil, req.Context().Err()
		case <-timer.C:
		}
	}
}

// once makes one attempt under the per-attempt timeout. The timeout covers
// reading the body too, so it is cancelled only when the body is closed.
func (t *RetryTransport) once(req *http.Request) (*http.Response, error) {
	if t.Policy.Timeout <= 0 {
		return t.Next.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeoutCause(req.Context(), t.Policy.Timeout, errAttemptTimeout)
	resp, err := t.Next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		if errors.Is(context.Cause(ctx), errAttemptTimeout) && req.Context().Err() == nil {
			err = errAttemptTimeout
		}
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

var errAttemptTimeout = errors.New("registry request timed out")

// Backoff is exponential with full jitter: uniform in [0, min(max, base*2^(n-1))).
func (t *RetryTransport) Backoff(attempt int) time.Duration {
	ceil := t.Policy.Base << (attempt - 1)
	if ceil <= 0 || ceil > t.Policy.Max {
		ceil = t.Policy.Max
	}
	if ceil <= 0 {
		return 0
	}
	return rand.N(ceil)
}

// Transient reports network errors worth another attempt. Others (a TLS
// handshake with a plain-http server, a bad certificate, a bad URL) would
// fail the same way again.
func Transient(err error) bool {
	var ne net.Error
	return errors.Is(err, errAttemptTimeout) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) ||
		(errors.As(err, &ne) && ne.Timeout())
}

func retryableStatus(code int) bool {
	return code >= 500 && code != http.StatusNotImplemented && code != http.StatusHTTPVersionNotSupported
}

// RetryAfter reads a Retry-After value (delay-seconds or an HTTP-date);
// -1 when it is absent or unreadable.
func RetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return -1
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s < 0 {
			return -1
		}
		return time.Duration(s) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0)
	}
	return -1
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// LimitTransport waits for the registry's shared limiter before each attempt.
type LimitTransport struct {
	Next    http.RoundTripper
	Limiter *rate.Limiter // nil: unlimited
}

func (t *LimitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.Limiter != nil {
		if err := t.Limiter.Wait(req.Context()); err != nil {
			return nil, err
		}
	}
	return t.Next.RoundTrip(req)
}

// CountTransport counts every request that reaches the registry, for the
// scan record (N) and in Requests (by registry and status code, or
// "error").
type CountTransport struct {
	Next     http.RoundTripper
	N        *atomic.Int64
	Registry string
	Requests *prometheus.CounterVec
}

func (t *CountTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.N.Add(1)
	resp, err := t.Next.RoundTrip(req)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	t.Requests.WithLabelValues(t.Registry, code).Inc()
	return resp, err
}
