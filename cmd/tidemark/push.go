package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/indexer"
	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/internal/notify"
	"github.com/tidemark-dev/tidemark/server"
	"github.com/tidemark-dev/tidemark/server/webhooks"
	"github.com/tidemark-dev/tidemark/store"
)

// newDeliverer wires outbound notifications. Every replica runs one: the
// store's row lock per endpoint lets only one send at a time. Events that
// indexing causes are recorded only by the replica that indexes (leading).
// newDeliverer makes the deliverer and every endpoint's cursor: a new
// endpoint is sent what is written after its cursor, and serve writes
// events (pins, start-up moves) as soon as it runs.
func newDeliverer(ctx context.Context, cfg *config.Config, st *store.Store, log *slog.Logger, reg prometheus.Registerer, leading func() bool) (*notify.Deliverer, error) {
	chSources := map[string]string{}
	for _, c := range cfg.Channels {
		chSources[c.Name] = c.Source
	}
	source := cfg.ExternalURL
	if source == "" {
		source = "tidemark"
	}
	dl, err := notify.New(notify.Options{
		Endpoints:      notifyEndpoints(cfg),
		Store:          st,
		ChannelSources: chSources,
		Source:         source,
		Log:            log,
		Metrics:        reg,
		Leading:        leading,
	})
	if err != nil {
		return nil, err
	}
	return dl, dl.StartCursors(ctx)
}

// pushFunc hands webhook events to the indexer. The work belongs to the
// service (ctx), not to the request that brought the event.
func pushFunc(ctx context.Context, ix **indexer.Indexer) server.PushFunc {
	return func(_ context.Context, ev webhooks.PushEvent, received time.Time) (int, error) {
		matched, err := (*ix).Push(ctx, indexer.PushEvent{
			Host: ev.Host, Repository: ev.Repository, Tag: ev.Tag, Delete: ev.Delete, Received: received,
		})
		if errors.Is(err, indexer.ErrPushQueueFull) {
			err = fmt.Errorf("%w: %w", server.ErrRateLimited, err)
		}
		return len(matched), err
	}
}

// notifyEndpoints are the configuration's notify: entries.
func notifyEndpoints(cfg *config.Config) []notify.Endpoint {
	out := make([]notify.Endpoint, 0, len(cfg.Notify))
	for _, n := range cfg.Notify {
		e := notify.Endpoint{Name: n.Name, URL: n.URL, Kind: n.Kind, Channels: n.Channels}
		if n.SecretFile != "" {
			e.Secret = secretFile(n.SecretFile)
		}
		out = append(out, e)
	}
	return out
}

// secretFile reads a secret at use time, so that a rotated file needs no
// restart; a trailing newline (echo > file) is not part of it. "": the
// feature is off (nil).
func secretFile(path string) func() ([]byte, error) {
	if path == "" {
		return nil
	}
	return func() ([]byte, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("secret file: %w", err)
		}
		return bytes.TrimRight(b, "\r\n"), nil
	}
}

// secretFunc is secretFile as the server takes it (nil when unset).
func secretFunc(path string) webhooks.SecretFunc {
	if f := secretFile(path); f != nil {
		return f
	}
	return nil
}
