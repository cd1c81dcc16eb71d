package snapshot

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

func TestPlanPin(t *testing.T) {
	channels := []catalog.Channel{
		{Name: "released", Source: "k3s-upgrade", Stream: resolver.Released},
		{Name: "fixed", Source: "k3s-upgrade", Latest: "v1.32.5+k3s1"},
	}
	s := New(channels, []catalog.SourceData{k3sData(t, "v1.33.5+k3s1")}, nil, testTime)
	cases := []struct {
		name, channel, version string
		force                  bool
		wantErr                error
		wantMsg                string // in the error
		wantVersion, wantFrom  string
	}{
		{name: "an eligible tag pins its canonical version, from what is served", channel: "released", version: "v1.33.6-k3s1",
			wantVersion: "v1.33.6+k3s1", wantFrom: "v1.35.1+k3s1"},
		{name: "an rc on a released channel is refused with the force hint", channel: "released", version: "v1.34.0-rc2+k3s1",
			wantErr: resolver.ErrUnprocessable, wantMsg: `send "force": true`},
		{name: "force pins an ineligible rc", channel: "released", version: "v1.34.0-rc2+k3s1", force: true,
			wantVersion: "v1.34.0-rc2+k3s1", wantFrom: "v1.35.1+k3s1"},
		{name: "force never pins a version that is not indexed", channel: "released", version: "v9.9.9", force: true,
			wantErr: resolver.ErrUnprocessable, wantMsg: `"v9.9.9" is not indexed in source "k3s-upgrade"`},
		{name: "force never pins a blocked version", channel: "released", version: "v1.33.5+k3s1", force: true,
			wantErr: resolver.ErrUnprocessable, wantMsg: "is blocked (bad v1.33.5+k3s1); unblock it first"},
		{name: "an unknown channel is not found", channel: "nope", version: "v1.33.6+k3s1", wantErr: resolver.ErrNotFound},
		{name: "a config-fixed channel pins from its fixed version", channel: "fixed", version: "v1.33.6+k3s1",
			wantVersion: "v1.33.6+k3s1", wantFrom: "v1.32.5+k3s1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.PlanPin(tc.channel, tc.version, tc.force)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("err = %v, want %v containing %q", err, tc.wantErr, tc.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != tc.wantVersion || got.From != tc.wantFrom || got.Source != "k3s-upgrade" || got.IfRevision != resolver.AnyRevision {
				t.Errorf("plan %+v, want version %s from %s", got, tc.wantVersion, tc.wantFrom)
			}
		})
	}
}

func TestPlanUnpinAndItsExplanation(t *testing.T) {
	channels := []catalog.Channel{
		{Name: "released", Source: "k3s-upgrade", Stream: resolver.Released},
		{Name: "fixed", Source: "k3s-upgrade", Latest: "v1.32.5+k3s1"},
	}
	states := map[string]catalog.ChannelState{"released": {Pin: "v1.31.9+k3s1"}}
	s := New(channels, []catalog.SourceData{k3sData(t)}, states, testTime)
	got, err := s.PlanUnpin("released")
	if err != nil {
		t.Fatal(err)
	}
	if got.From != "v1.31.9+k3s1" || got.To != "v1.35.1+k3s1" {
		t.Errorf("unpin plan from %q to %q, want v1.31.9+k3s1 to v1.35.1+k3s1", got.From, got.To)
	}
	noPin := resolver.ErrNotFound
	if err := s.ExplainUnpin("fixed", noPin); !errors.Is(err, resolver.ErrNotFound) || !strings.Contains(err.Error(), "fixed to v1.32.5+k3s1 by its configuration") {
		t.Errorf("explained %v, want the configuration named", err)
	}
	if err := s.ExplainUnpin("released", noPin); err != noPin {
		t.Errorf("a channel without latest: explained %v, want the error as it was", err)
	}
}
