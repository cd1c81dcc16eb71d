package snapshot

import (
	"errors"
	"testing"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

var riskTags = []string{"v1.32.9+k3s1", "v1.33.0+k3s1", "v1.33.4+k3s1", "v1.33.6+k3s1", "v1.34.0+k3s1", "v1.34.2+k3s1"}

// riskSnapshot is a plain and a stepwise channel of one source with risks.
func riskSnapshot(t *testing.T, risks ...catalog.Risk) *Snapshot {
	t.Helper()
	d := sourceData(t, "k3s", mustParser(t, resolver.SchemeSemver, `k3s(\d+)`), riskTags)
	for i := range risks {
		risks[i].Source = "k3s"
		if risks[i].Message == "" {
			risks[i].Message = "breaks " + risks[i].Name
		}
		if err := risks[i].Compile(); err != nil {
			t.Fatalf("risk %s: %v", risks[i].Name, err)
		}
	}
	d.Risks = risks
	chs := []catalog.Channel{
		{Name: "stable", Source: "k3s", Stream: resolver.Released},
		{Name: "steps", Source: "k3s", Stream: resolver.Released, Stepwise: true},
	}
	return New(chs, []catalog.SourceData{d}, nil, testTime)
}

func reported(t *testing.T, s *Snapshot, v string) resolver.Version {
	t.Helper()
	r, ok := s.Reported("stable", v)
	if !ok {
		t.Fatalf("%s does not parse", v)
	}
	return r
}

// TestClusterAnswerAvoidsRisks: CONTRACT section 13's example: a risk
// from <1.33.5 to >=1.34.0 steers a 1.33.0 cluster to 1.33.6 first, on a
// plain and a stepwise channel; a risk for some clusters only steers
// them; with nothing safe the cluster stays; without a reported version
// the channel's answer stands.
func TestClusterAnswerAvoidsRisks(t *testing.T) {
	s := riskSnapshot(t,
		catalog.Risk{Name: "EtcdMigration", From: "<1.33.5", To: ">=1.34.0"},
		catalog.Risk{Name: "ProdOnly", From: "1.33.6", To: "1.34.2", Clusters: []string{"^prod-"}},
		catalog.Risk{Name: "OldNodes", From: "<1.33.0", To: ">1.32.9"},
	)
	for _, tc := range []struct {
		name, channel, id, from, want, held string
	}{
		{"plain: the newest version not risky from R", "stable", "c1", "v1.33.0+k3s1", "v1.33.6+k3s1", ""},
		{"plain: an edge no risk covers is answered", "stable", "c1", "v1.33.6+k3s1", "v1.34.2+k3s1", ""},
		{"plain: a risk for matching clusters only", "stable", "prod-7", "v1.33.6+k3s1", "v1.34.0+k3s1", ""},
		{"stepwise: a newer version of R's own minor first", "steps", "c1", "v1.33.0+k3s1", "v1.33.6+k3s1", ""},
		{"stepwise: the next minor when safe", "steps", "c1", "v1.33.6+k3s1", "v1.34.2+k3s1", ""},
		{"stepwise: a risky newest of the next minor gives an older one", "steps", "prod-1", "v1.33.6+k3s1", "v1.34.0+k3s1", ""},
		{"nothing safe: the cluster stays", "stable", "c1", "v1.32.9+k3s1", "v1.32.9+k3s1", HeldRisk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := Asker{ID: tc.id, Reported: reported(t, s, tc.from), HasReported: true, Now: testTime}
			d, err := s.ClusterAnswer(tc.channel, q)
			got, held := d.Tag, d.Held
			if err != nil || got.Version.String() != tc.want || held != tc.held {
				t.Errorf("answer %s held %q (%v), want %s held %q", got.Version, held, err, tc.want, tc.held)
			}
		})
	}
	d, err := s.ClusterAnswer("stable", Asker{ID: "c1", Now: testTime})
	got, held := d.Tag, d.Held
	if err != nil || got.Version.String() != "v1.34.2+k3s1" || held != "" {
		t.Errorf("no reported version: %s held %q (%v), want the channel's v1.34.2+k3s1", got.Version, held, err)
	}
}

// TestRisksNeverSendDownOrSkip: whatever risks say, an answer is never
// older than the reported version and never skips a minor on a stepwise
// channel.
func TestRisksNeverSendDownOrSkip(t *testing.T) {
	s := riskSnapshot(t, catalog.Risk{Name: "All", From: "*", To: "*"}, catalog.Risk{Name: "Minor34", From: "*", To: "~1.34"})
	for _, from := range riskTags {
		r := reported(t, s, from)
		for _, ch := range []string{"stable", "steps"} {
			d, err := s.ClusterAnswer(ch, Asker{ID: "c", Reported: r, HasReported: true, Now: testTime})
			got := d.Tag
			if err != nil {
				t.Fatalf("%s from %s: %v", ch, from, err)
			}
			if resolver.Compare(got.Version, r) != 0 {
				t.Errorf("%s from %s: %s, want to stay (every edge is risky)", ch, from, got.Version)
			}
		}
	}
	s = riskSnapshot(t, catalog.Risk{Name: "Minor34", From: "*", To: "~1.34"})
	d, _ := s.ClusterAnswer("steps", Asker{ID: "c", Reported: reported(t, s, "v1.32.9+k3s1"), HasReported: true, Now: testTime})
	got := d.Tag
	if got.Version.Minor != 33 {
		t.Errorf("stepwise from 1.32.9: %s, want a 1.33 version", got.Version)
	}
}

// TestResolveWithRisks: resolve lists risky candidates, and target and
// path avoid those not accepted.
func TestResolveWithRisks(t *testing.T) {
	s := riskSnapshot(t, catalog.Risk{Name: "EtcdMigration", From: "<1.33.5", To: ">=1.34.0", URL: "https://example.com/etcd"})
	a, err := s.Resolve(Query{Channel: "stable", Current: "v1.33.0+k3s1", Cluster: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Target == nil || a.Target.Version.String() != "v1.33.6+k3s1" {
		t.Fatalf("target %v, want 1.33.6+k3s1", a.Target)
	}
	if len(a.Path) != 2 || a.Path[1].Version.String() != "v1.34.2+k3s1" {
		t.Errorf("path %v, want 1.33.6+k3s1 then 1.34.2+k3s1", a.Path)
	}
	if len(a.Risks) != 2 || a.Risks[0].Risk.Name != "EtcdMigration" || a.Risks[0].To.Version.String() != "v1.34.0+k3s1" || a.Risks[0].Accepted {
		t.Errorf("risks %+v, want EtcdMigration on 1.34.0 and 1.34.2", a.Risks)
	}
	a, err = s.Resolve(Query{Channel: "stable", Current: "v1.33.0+k3s1", AcceptRisks: []string{"EtcdMigration"}})
	if err != nil || a.Target == nil || a.Target.Version.String() != "v1.34.2+k3s1" || !a.Risks[0].Accepted {
		t.Errorf("accepted: target %v risks %+v (%v), want 1.34.2+k3s1", a.Target, a.Risks, err)
	}
	_, err = s.Resolve(Query{Channel: "stable", Current: "v1.33.0+k3s1", Target: "v1.34.2+k3s1"})
	if !errors.Is(err, resolver.ErrUnprocessable) {
		t.Errorf("explicit risky target: %v, want ErrUnprocessable", err)
	}
	s = riskSnapshot(t, catalog.Risk{Name: "All", From: "*", To: "*"})
	a, err = s.Resolve(Query{Channel: "stable", Current: "v1.33.0+k3s1"})
	if err != nil || a.Target != nil {
		t.Errorf("every candidate risky: target %v (%v), want none", a.Target, err)
	}
}
