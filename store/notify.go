package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/store/internal/pg"
)

// ReconnectedPayload is passed to Listen's fn each time the listening
// connection (re)starts listening: notifications sent while nobody listened
// are lost, so the listener should reload everything.
const ReconnectedPayload = `{"kind":"reconnected"}`

// Reconnect backoff of Listen: doubled after each failed attempt, back to
// the start once LISTEN succeeds, so one outage does not slow later ones.
const (
	listenBackoffStart = 100 * time.Millisecond
	listenBackoffMax   = 10 * time.Second
)

// Listen calls fn with the payload of every change notification (from this
// or any other replica) until ctx ends, reconnecting by itself.
//
// It uses its own connection (LISTEN is per session) outside the pool. After
// every successful LISTEN, the first included, it calls fn(ReconnectedPayload):
// a change committed before LISTEN took effect is never delivered, so a
// caller that loaded before calling Listen must load again then. fn runs on
// Listen's goroutine; a slow fn delays later notifications but loses none.
// Returns nil when ctx ends.
func (s *Store) Listen(ctx context.Context, fn func(payload string)) error {
	return s.listen(ctx, NotifyChannel, fn)
}

// listen is Listen on the NOTIFY channel named channel.
func (s *Store) listen(ctx context.Context, channel string, fn func(payload string)) error {
	backoff := listenBackoffStart
	first := true
	for ctx.Err() == nil {
		listened, err := s.listenOnce(ctx, channel, fn, !first)
		if ctx.Err() != nil {
			break
		}
		if listened {
			first = false
			backoff = listenBackoffStart
		}
		s.log.WarnContext(ctx, "change listener lost its connection; reconnecting", "channel", channel,
			"err", pg.Err("listen", err), "retry_in", backoff)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, listenBackoffMax)
	}
	return nil
}

// listenOnce connects, listens and delivers until the connection fails.
// listened reports whether LISTEN took effect.
func (s *Store) listenOnce(ctx context.Context, channel string, fn func(string), reconnect bool) (listened bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "listen "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return false, err
	}
	if reconnect {
		s.log.InfoContext(ctx, "change listener reconnected", "channel", channel)
	}
	fn(ReconnectedPayload)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		fn(n.Payload)
	}
}

// payload is a change notification's JSON: {"kind":"scan","source":"x"}.
// Listeners only need to know that something changed; the fields help logs.
func payload(kind, source string, kv ...string) string {
	m := map[string]string{"kind": kind}
	if source != "" {
		m["source"] = source
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}
