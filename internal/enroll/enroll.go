// Package enroll keeps the enrolled clusters' keys in memory on every
// replica (fleet.enrollment): a channel request's key is checked without
// a database read, and a new or revoked key reaches every replica as soon
// as Postgres delivers the notification the change sends.
package enroll

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
)

// Modes of fleet.enrollment.
const (
	Off      = ""
	Optional = "optional"
	Required = "required"
)

// Store is where the keys are (*store.Store).
type Store interface {
	EnrolledKeys(ctx context.Context) ([]resolver.EnrolledKey, error)
	// ListenEnrollments calls fn after every change, and each time it
	// (re)starts listening, until ctx ends.
	ListenEnrollments(ctx context.Context, fn func()) error
}

// Keys is every valid key's hash, by hash. The zero value (and nil) has
// enrollment off.
type Keys struct {
	mode  string
	store Store
	log   *slog.Logger
	keys  atomic.Pointer[map[[32]byte]string]
	kick  chan struct{}
}

// New keeps st's keys for mode (Off: nil, nothing kept).
func New(mode string, st Store, log *slog.Logger) *Keys {
	if mode == Off || st == nil {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Keys{mode: mode, store: st, log: log, kick: make(chan struct{}, 1)}
}

// Mode is fleet.enrollment: Off, Optional or Required.
func (k *Keys) Mode() string {
	if k == nil {
		return Off
	}
	return k.mode
}

// Reload reads every valid key.
func (k *Keys) Reload(ctx context.Context) error {
	list, err := k.store.EnrolledKeys(ctx)
	if err != nil {
		return err
	}
	m := make(map[[32]byte]string, len(list))
	for _, e := range list {
		m[e.Hash] = e.ID
	}
	k.keys.Store(&m)
	return nil
}

// Run keeps the keys current until ctx ends: every notification reloads
// them (a burst once), and a failed reload is tried again every second.
func (k *Keys) Run(ctx context.Context) {
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		if err := k.store.ListenEnrollments(ctx, k.changed); err != nil && ctx.Err() == nil {
			k.log.Error("listening for enrollments stopped", "err", err)
		}
	}()
	defer func() { <-listening }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.kick:
		}
		for {
			err := k.Reload(ctx)
			if err == nil || ctx.Err() != nil {
				break
			}
			k.log.Warn("reading enrolled keys failed; keeping the last ones", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

func (k *Keys) changed() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// ID is the cluster ID key is enrolled as; ok false for a wrong or
// revoked key (or before the first load).
func (k *Keys) ID(key string) (string, bool) {
	if k == nil {
		return "", false
	}
	m := k.keys.Load()
	if m == nil {
		return "", false
	}
	id, ok := (*m)[sha256.Sum256([]byte(key))]
	return id, ok
}

// KeyOf is the enrollment key a channel request carries: ?key= or
// Authorization: Bearer; "" when none.
func KeyOf(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			if tok = strings.TrimSpace(tok); tok != "" {
				return tok
			}
		}
	}
	// The query read without building url.Values: this is every
	// enrolled request's path.
	for rest := r.URL.RawQuery; rest != ""; {
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		if v, ok := strings.CutPrefix(pair, "key="); ok {
			if u, err := url.QueryUnescape(v); err == nil {
				return u
			}
			return ""
		}
	}
	return ""
}
