package server

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

func TestAccessLogModes(t *testing.T) {
	for _, tc := range []struct {
		mode           string
		wantOK         int // lines for 300 redirects
		wantNotFound   int // lines for 5 unknown channels
		wantSampleAttr bool
	}{
		{"all", 300, 5, false},
		{"", 3, 5, true}, // sample, the default
		{"sample", 3, 5, true},
		{"off", 0, 5, false},
	} {
		t.Run("mode "+tc.mode+" logs every error", func(t *testing.T) {
			logs := &testutil.LockedBuffer{}
			snap := k3sSnapshot(t)
			s, err := New(Options{
				AccessLog: tc.mode,
				Log:       slog.New(slog.NewTextHandler(logs, nil)),
				Load:      func(context.Context) (*snapshot.Snapshot, error) { return snap, nil },
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Reload(context.Background()); err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(s.Handler())
			defer ts.Close()
			for range 300 {
				get(t, ts, "/v1-release/channels/stable")
			}
			for range 5 {
				get(t, ts, "/v1-release/channels/nope")
			}
			ok := strings.Count(logs.String(), "status=302")
			notFound := strings.Count(logs.String(), "status=404")
			if ok != tc.wantOK || notFound != tc.wantNotFound {
				t.Errorf("%d lines of 302 and %d of 404, want %d and %d", ok, notFound, tc.wantOK, tc.wantNotFound)
			}
			if got := strings.Contains(logs.String(), "sample=100"); got != tc.wantSampleAttr {
				t.Errorf("sample=100 in the log: %v, want %v", got, tc.wantSampleAttr)
			}
		})
	}
}

func TestAccessLogModeUnknownIsRefused(t *testing.T) {
	_, err := New(Options{AccessLog: "some", Load: func(context.Context) (*snapshot.Snapshot, error) { return nil, nil }})
	if err == nil || !strings.Contains(err.Error(), `access log "some": want all, sample or off`) {
		t.Fatalf("err = %v, want the mode named", err)
	}
}
