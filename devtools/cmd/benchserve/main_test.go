package main

import (
	"strings"
	"testing"
)

func TestSelectTargets(t *testing.T) {
	all := []target{{key: "floor"}, {key: "plain"}, {key: "floor-clusters"}, {key: "ignored"}, {key: "clusters"}, {key: "stepwise"}}
	keys := func(ts []target) string {
		var ks []string
		for _, t := range ts {
			ks = append(ks, t.key)
		}
		return strings.Join(ks, ",")
	}
	for _, c := range []struct{ list, want, err string }{
		{"", "floor,plain,floor-clusters,ignored,clusters,stepwise", ""},
		// The targets' own order, whatever the list's.
		{"clusters, floor-clusters", "floor-clusters,clusters", ""},
		{"stepwise", "stepwise", ""},
		{"clusters,flor", "", `-targets: unknown target "flor"`},
		{"plain,channelserver", "", "-targets: channelserver needs -channelserver"},
	} {
		got, err := selectTargets(all, c.list)
		if c.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.list, err, c.err)
			}
			continue
		}
		if err != nil || keys(got) != c.want {
			t.Errorf("%q: %s, %v; want %s", c.list, keys(got), err, c.want)
		}
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5}
	for q, want := range map[float64]float64{0: 1, 0.25: 2, 0.5: 3, 0.75: 4, 1: 5} {
		if got := quantile(xs, q); got != want {
			t.Errorf("quantile(%v) = %v, want %v", q, got, want)
		}
	}
	if got := quantile([]float64{1, 2}, 0.25); got != 1.25 {
		t.Errorf("quantile of two at 0.25 = %v, want 1.25", got)
	}
	if got := quantile([]float64{7}, 0.75); got != 7 {
		t.Errorf("quantile of one = %v, want 7", got)
	}
}

// The ignored headers cost wrk and net/http what the cluster headers do,
// and none of them is one Tidemark reads.
func TestIgnoredHeadersMatchTheClusterHeaders(t *testing.T) {
	pairs := [][2]string{
		{clusterHeaders.cluster, ignoredHeaders.cluster},
		{clusterHeaders.version, ignoredHeaders.version},
		{clusterHeaders.forwarded, ignoredHeaders.forwarded},
	}
	for _, p := range pairs {
		if len(p[0]) != len(p[1]) {
			t.Errorf("%s is %d bytes, %s %d", p[1], len(p[1]), p[0], len(p[0]))
		}
		for _, read := range pairs {
			if strings.EqualFold(p[1], read[0]) {
				t.Errorf("%s is a header Tidemark reads", p[1])
			}
		}
	}
}
