package indexer

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

// retryPolicy bounds retries. Fields are tuned down in tests.
type retryPolicy struct {
	attempts      int           // total attempts per request, first included
	base          time.Duration // backoff before the 2nd attempt is drawn from [0, base)
	max           time.Duration // cap of the exponential backoff
	maxRetryAfter time.Duration // a longer Retry-After is shortened to this
	timeout       time.Duration // per attempt, headers and body
}

var defaultRetry = retryPolicy{
	attempts:      4,
	base:          250 * time.Millisecond,
	max:           8 * time.Second,
	maxRetryAfter: 60 * time.Second,
	timeout:       30 * time.Second,
}

type retryTransport struct {
	next   http.RoundTripper
	policy retryPolicy
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// Only requests without a body are replayed; ggcr's token POST is not.
	idempotent := (req.Method == http.MethodGet || req.Method == http.MethodHead) && req.Body == nil
	attempts := t.policy.attempts
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
			if !transient(err) {
				return nil, err
			}
			wait = t.backoff(attempt)
		case resp.StatusCode == http.StatusTooManyRequests:
			wait = retryAfter(resp.Header.Get("Retry-After"), time.Now())
			if wait < 0 {
				wait = t.backoff(attempt)
			}
			wait = min(wait, t.policy.maxRetryAfter)
		case retryableStatus(resp.StatusCode):
			wait = t.backoff(attempt)
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
func (t *retryTransport) once(req *http.Request) (*http.Response, error) {
	if t.policy.timeout <= 0 {
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeoutCause(req.Context(), t.policy.timeout, errAttemptTimeout)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
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

// backoff is exponential with full jitter: uniform in [0, min(max, base*2^(n-1))).
func (t *retryTransport) backoff(attempt int) time.Duration {
	ceil := t.policy.base << (attempt - 1)
	if ceil <= 0 || ceil > t.policy.max {
		ceil = t.policy.max
	}
	if ceil <= 0 {
		return 0
	}
	return rand.N(ceil)
}

// transient reports network errors worth another attempt. Others (a TLS
// handshake with a plain-http server, a bad certificate, a bad URL) would
// fail the same way again.
func transient(err error) bool {
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

// retryAfter reads a Retry-After value (delay-seconds or an HTTP-date);
// -1 when it is absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
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

// limitTransport waits for the registry's shared limiter before each attempt.
type limitTransport struct {
	next    http.RoundTripper
	limiter *rate.Limiter // nil: unlimited
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.limiter != nil {
		if err := t.limiter.Wait(req.Context()); err != nil {
			return nil, err
		}
	}
	return t.next.RoundTrip(req)
}

// countTransport counts every request that reaches the registry, for the
// scan record (n) and for the metric (by status code, or "error").
type countTransport struct {
	next     http.RoundTripper
	n        *atomic.Int64
	registry string
	metrics  *metrics
}

func (t *countTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.n.Add(1)
	resp, err := t.next.RoundTrip(req)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	t.metrics.requests.WithLabelValues(t.registry, code).Inc()
	return resp, err
}
