package snapshot

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// benchK3sTags returns n k3s-shaped tags, deterministic: per patch two rcs
// and three build revisions, over as many minors as needed.
func benchK3sTags(n int) []string {
	tags := make([]string, 0, n)
	for minor := 10; len(tags) < n; minor++ {
		for patch := 0; patch < 40 && len(tags) < n; patch++ {
			for _, suffix := range []string{"-rc1-k3s1", "-rc2+k3s1", "+k3s1", "-k3s2", "+k3s3"} {
				if len(tags) == n {
					break
				}
				tags = append(tags, fmt.Sprintf("v1.%d.%d%s", minor, patch, suffix))
			}
		}
	}
	return tags
}

func benchSnapshot(b *testing.B, n int, channels []catalog.Channel) *Snapshot {
	b.Helper()
	d := sourceData(b, "k3s-upgrade", mustParser(b, resolver.SchemeSemver, `k3s(\d+)`), benchK3sTags(n))
	return New(channels, []catalog.SourceData{d}, nil, testTime)
}

// BenchmarkChannelResolve evaluates one channel over 10,000 versions with the
// uncached Pick (what New runs once per channel), from the best case
// (the newest version qualifies) to the worst (every version is checked),
// and then the snapshot lookup that serves requests.
func BenchmarkChannelResolve(b *testing.B) {
	const n = 10000
	cs := func(name, include, exclude string) catalog.Channel { return csChannel(name, include, exclude) }
	constrained := func(name, text string) catalog.Channel {
		return catalog.Channel{Name: name, Source: "k3s-upgrade", Stream: resolver.Testing, Constraint: testutil.Constraint(b, text), ConstraintText: text}
	}
	// The constraint channels all answer from the oldest minor: the scan
	// covers all 10,000 versions. Prerelease comparators let prereleases
	// reach the full check instead of the early rejection.
	cases := []catalog.Channel{
		{Name: "released-newest", Source: "k3s-upgrade"},
		cs("latest-regexps", `.*`, `(^[^+]+-|v1\.25\.5\+k3s1)`),
		cs("oldest-minor-regexps", `v1\.10\..*`, `^[^+]+-`),
		constrained("constraint", "~1.10"),
		constrained("constraint-prerelease", ">=1.10.0-0 <1.11.0-0"),
		constrained("constraint-or-prerelease", "^0.9 || 1.10.x-0 || ~1.10.3-rc1"),
		cs("nothing-eligible", `v2\.`, ""),
	}
	s := benchSnapshot(b, n, cases)
	vs, err := s.Versions("k3s-upgrade", resolver.Testing, "")
	if err != nil {
		b.Fatal(err)
	}
	if len(vs) != n {
		b.Fatalf("%d versions indexed, want %d", len(vs), n)
	}
	idx := s.bySource["k3s-upgrade"]
	for i := range cases {
		c := &cases[i]
		f := catalog.ChannelFilter(c, testTime)
		b.Run("pick/"+c.Name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f.Pick(idx.versions, idx.keys)
			}
		})
	}
	b.Run("snapshot-lookup", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Channel("oldest-minor-regexps"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkNewSnapshot indexes 100,000 tags (classified beforehand, as the
// store hands them over) with 20 channels.
func BenchmarkNewSnapshot(b *testing.B) {
	d := sourceData(b, "k3s-upgrade", mustParser(b, resolver.SchemeSemver, `k3s(\d+)`), benchK3sTags(100000))
	var channels []catalog.Channel
	for m := 10; m < 30; m++ {
		channels = append(channels, catalog.Channel{
			Name: fmt.Sprintf("v1.%d", m), Source: "k3s-upgrade", Stream: resolver.Testing,
			Include: regexp.MustCompile(fmt.Sprintf(`v1\.%d\..*`, m)), Exclude: regexp.MustCompile(`^[^+]+-`),
		})
	}
	b.ReportAllocs()
	for b.Loop() {
		New(channels, []catalog.SourceData{d}, nil, testTime)
	}
}

// BenchmarkVersions is GET /api/v1/sources/{s}/versions over 10,000 versions:
// without a constraint, and with constraints a client may send per request
// (the same string every time, as a hot client or an attacker would).
func BenchmarkVersions(b *testing.B) {
	s := benchSnapshot(b, 10000, nil)
	for _, tc := range []struct {
		name, constraint string
		stream           resolver.Stream
	}{
		{"all", "", resolver.Testing},
		{"released", "", resolver.Released},
		{"tilde-minor", "~1.10", resolver.Testing},
		{"range-or", ">=1.20.0-0 <1.30 || ^1.50.3", resolver.Testing},
		{"rejects-all", ">2", resolver.Testing},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Versions("k3s-upgrade", tc.stream, tc.constraint); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkClusterAnswer is the per-cluster decision a stepwise channel
// with a settle makes on every request (server.answerFor): clusters spread
// over the indexed versions, each either still settling (held at its own
// version, looked up again) or settled (given its next step), and a plain
// channel's downgrade hold (a cluster above the answer keeps its own).
func BenchmarkClusterAnswer(b *testing.B) {
	const n = 2000
	s := benchSnapshot(b, n, []catalog.Channel{
		{Name: "stepwise", Source: "k3s-upgrade", Stepwise: true, Settle: time.Hour},
		{Name: "v1.15", Source: "k3s-upgrade", Constraint: testutil.Constraint(b, "~1.15"), ConstraintText: "~1.15"},
	})
	vs, err := s.Versions("k3s-upgrade", resolver.Released, "")
	if err != nil {
		b.Fatal(err)
	}
	reported := make([]resolver.Version, 0, len(vs))
	for _, v := range vs {
		reported = append(reported, v.Version)
	}
	for _, c := range []struct {
		name, channel string
		since         time.Duration // before now; settling when under the hour
	}{
		{"stepwise-settling", "stepwise", time.Minute},
		{"stepwise-settled", "stepwise", 2 * time.Hour},
		{"plain-above-the-answer", "v1.15", 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				q := Asker{ID: "cluster", Reported: reported[i%len(reported)], HasReported: true, Now: testTime, Since: testTime.Add(-c.since)}
				if _, err := s.ClusterAnswer(c.channel, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
