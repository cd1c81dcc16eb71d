package resolver

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// benchTags is a deterministic mix of 100,000 registry tags as the two kinds
// of source see them: juju-shaped, k3s-shaped, and garbage (signatures,
// "latest", architecture suffixes, random bytes).
func benchTags(n int) []string {
	r := rand.New(rand.NewPCG(42, 2))
	pre := []string{"alpha", "beta", "rc"}
	tags := make([]string, n)
	for i := range tags {
		maj, mnr, pat := r.IntN(4), r.IntN(40), r.IntN(300)
		switch k := r.IntN(20); {
		case k < 5:
			tags[i] = fmt.Sprintf("%d.%d.%d", maj, mnr, pat)
		case k < 7:
			tags[i] = fmt.Sprintf("%d.%d-%s%d", maj, mnr, pre[r.IntN(3)], 1+r.IntN(12))
		case k < 8:
			tags[i] = fmt.Sprintf("%d.%d.%d.%d", maj, mnr, pat, 1+r.IntN(9))
		case k < 9:
			tags[i] = fmt.Sprintf("%d.%d.%d-focal-amd64", maj, mnr, pat)
		case k < 13:
			tags[i] = fmt.Sprintf("v1.%d.%d-k3s%d", mnr, pat, 1+r.IntN(3))
		case k < 15:
			tags[i] = fmt.Sprintf("v1.%d.%d-%s%d-k3s%d", mnr, pat, pre[r.IntN(3)], 1+r.IntN(12), 1+r.IntN(3))
		case k < 16:
			tags[i] = fmt.Sprintf("v1.%d.%d-k3s1-%s", mnr, pat, []string{"amd64", "arm64", "arm"}[r.IntN(3)])
		case k < 17:
			tags[i] = fmt.Sprintf("v1.%d.%d+k3s%d", mnr, pat, 1+r.IntN(3))
		case k < 18:
			tags[i] = fmt.Sprintf("sha256-%016x.sig", r.Uint64())
		case k < 19:
			tags[i] = []string{"latest", "stable", "edge", "2.9", "v2.9.1", ""}[r.IntN(6)]
		default:
			b := make([]byte, 1+r.IntN(24))
			for j := range b {
				b[j] = "0123456789.-+vabcrk"[r.IntN(19)]
			}
			tags[i] = string(b)
		}
	}
	return tags
}

var sinkTag Tag

// BenchmarkClassify is the indexer's hot path: tag -> version and stream,
// error text included for tags that are no version.
func BenchmarkClassify(b *testing.B) {
	tags := benchTags(100_000)
	for _, src := range []struct {
		Name   string
		Parser *Parser
	}{
		{Name: "juju", Parser: MustParser(SchemeJuju, "")},
		{Name: "semver", Parser: MustParser(SchemeSemver, "")},
		{Name: "semver-k3s", Parser: MustParser(SchemeSemver, `k3s(\d+)`)},
		{Name: "semver-regexp", Parser: MustParser(SchemeSemver, `(?:k3s|rke2r)(\d+)`)},
	} {
		b.Run(src.Name, func(b *testing.B) {
			b.ReportAllocs()
			valid, rounds := 0, 0
			for b.Loop() {
				rounds++
				for _, tag := range tags {
					sinkTag = src.Parser.Classify(tag, nil)
					if sinkTag.Valid {
						valid++
					}
				}
			}
			n := float64(rounds) * float64(len(tags))
			b.ReportMetric(n/b.Elapsed().Seconds(), "tags/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/tag")
			b.ReportMetric(float64(valid)/n, "valid/tag")
		})
	}
}

// BenchmarkSort sorts 100,000 parsed versions.
func BenchmarkSort(b *testing.B) {
	tags := benchTags(100_000)
	p := MustParser(SchemeSemver, `k3s(\d+)`)
	var vs []Version
	for _, tag := range tags {
		if v, err := p.Parse(tag); err == nil {
			vs = append(vs, v)
		}
	}
	work := make([]Version, len(vs))
	for b.Loop() {
		copy(work, vs)
		slices.SortFunc(work, Compare)
	}
	b.ReportMetric(float64(len(vs)), "versions")
}
