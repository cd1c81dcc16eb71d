package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tidemark-dev/tidemark/resolver"
)

// ServedCounts reads the kept served counts of many channels' versions at
// once; a version nobody was served counts 0.
func TestServedCountsOfManyChannelsInOneCall(t *testing.T) {
	st, _ := newStore(t, "src")
	ctx := context.Background()
	now := time.Now()
	var ss []resolver.Sighting
	for i, served := range []string{"1.1.0", "1.1.0", "1.0.0", "1.2.0", ""} {
		ss = append(ss, resolver.Sighting{Cluster: clusterID(i), Channel: "stable", Served: served, At: now})
	}
	ss = append(ss, resolver.Sighting{Cluster: clusterID(0), Channel: "latest", Served: "1.1.0", At: now})
	if _, err := st.RecordFleet(ctx, ss); err != nil {
		t.Fatal(err)
	}
	cv := func(channel, version string) resolver.ChannelVersion {
		return resolver.ChannelVersion{Channel: channel, Version: version}
	}
	keys := []resolver.ChannelVersion{cv("stable", "1.1.0"), cv("stable", "1.0.0"), cv("stable", "0.9.0"), cv("latest", "1.1.0"), cv("other", "1.1.0")}
	got, err := st.ServedCounts(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	want := map[resolver.ChannelVersion]int{cv("stable", "1.1.0"): 2, cv("stable", "1.0.0"): 1, cv("stable", "0.9.0"): 0, cv("latest", "1.1.0"): 1, cv("other", "1.1.0"): 0}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ServedCounts (-want +got):\n%s", d)
	}
	if got, err := st.ServedCounts(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("ServedCounts(nil) = %v, %v; want empty", got, err)
	}
}
