package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server/api"
	"github.com/tidemark-dev/tidemark/store"
)

// hangupStore is the real store, with the client hanging up the moment a
// write has committed: the one instant a real client cannot be made to hit.
type hangupStore struct {
	*store.Store
	hangup context.CancelFunc
}

func (h hangupStore) Pin(ctx context.Context, c resolver.ChannelChange) (catalog.ChannelState, error) {
	defer h.hangup()
	return h.Store.Pin(ctx, c)
}

func (h hangupStore) Block(ctx context.Context, source, version, actor, reason string) (catalog.Block, error) {
	defer h.hangup()
	return h.Store.Block(ctx, source, version, actor, reason)
}

// TestClientHangupDoesNotFailReload: a write whose client hung up after the
// commit still reloads (the replica is not degraded and serves the change),
// and the reload is bounded in time, since it holds the reload lock.
func TestClientHangupDoesNotFailReload(t *testing.T) {
	env := newPGEnv(t, Options{})
	for _, w := range []struct{ name, method, path, body string }{
		{"pin", http.MethodPut, "/api/v1/channels/v1.33/pin", `{"version":"v1.33.5+k3s1"}`},
		{"block", http.MethodPut, "/api/v1/sources/k3s/versions/v1.33.6+k3s2/block", `{"reason":"bad image"}`},
	} {
		t.Run(w.name, func(t *testing.T) {
			ctx, hangup := context.WithCancel(context.Background())
			defer hangup()
			load := loadFrom(env.st, env.src)
			var deadline time.Duration
			srv, err := New(Options{
				Store: hangupStore{Store: env.st, hangup: hangup},
				Load: func(ctx context.Context) (*snapshot.Snapshot, error) {
					if d, ok := ctx.Deadline(); ok {
						deadline = time.Until(d)
					}
					return load(ctx)
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Reload(context.Background()); err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequestWithContext(ctx, w.method, w.path, strings.NewReader(w.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+env.tokens["ci-promote"])
			rec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Errorf("%s with the client gone after the commit: %d %s, want 200", w.name, rec.Code, rec.Body)
			}
			if why := srv.Snapshots().Degraded(); why != "" {
				t.Errorf("replica degraded by a client hang-up: %s", why)
			}
			if deadline <= 0 || deadline > api.WriteReloadTimeout {
				t.Errorf("reload after a write had %v left, want a deadline within %v", deadline, api.WriteReloadTimeout)
			}
		})
	}
}
