package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReconnectedPayload is passed to Listen's fn after the listening connection
// came back: notifications sent while it was down are lost, so the listener
// should reload everything.
const ReconnectedPayload = `{"kind":"reconnected"}`

// Listen calls fn with the payload of every change notification (from this
// or any other replica) until ctx ends, reconnecting by itself.
//
// It uses its own connection (LISTEN is per session) outside the pool. After
// a reconnect it calls fn(ReconnectedPayload). fn runs on Listen's goroutine;
// a slow fn delays later notifications but loses none. Returns nil when ctx
// ends.
func (s *Store) Listen(ctx context.Context, fn func(payload string)) error {
	backoff := 100 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, fn, !first)
		if ctx.Err() != nil {
			break
		}
		first = false
		s.log.WarnContext(ctx, "change listener lost its connection; reconnecting",
			"err", dbErr("listen", err), "retry_in", backoff)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
	return nil
}

// listenOnce connects, listens and delivers until the connection fails.
func (s *Store) listenOnce(ctx context.Context, fn func(string), reconnected bool) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "listen "+pgx.Identifier{NotifyChannel}.Sanitize()); err != nil {
		return err
	}
	if reconnected {
		s.log.InfoContext(ctx, "change listener reconnected")
		fn(ReconnectedPayload)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		fn(n.Payload)
	}
}
