package main

import (
	"crypto/sha256"
	"fmt"
	"regexp"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// snapshot builds a k3s-upgrade-like index: every patch of v1.16..v1.34
// with k3s1 (some k3s2) builds, release candidates, and noise, with one
// channel per minor in channelserver style, as update.k3s.io serves.
func buildSnapshot() (*snapshot.Snapshot, int, error) {
	p, err := resolver.NewParser(resolver.SchemeSemver, `k3s(\d+)`)
	if err != nil {
		return nil, 0, err
	}
	src := catalog.Source{Name: "k3s", Image: "docker.io/rancher/k3s-upgrade", Parser: p}
	if lifecycles {
		src.Lifecycle = benchLifecycle(time.Now())
	}
	var names []string
	for minor := 16; minor <= 34; minor++ {
		for patch := 0; patch <= 20; patch++ {
			for rc := 1; rc <= 3; rc++ {
				names = append(names, fmt.Sprintf("v1.%d.%d-rc%d-k3s1", minor, patch, rc))
			}
			names = append(names, fmt.Sprintf("v1.%d.%d-k3s1", minor, patch))
			if patch%5 == 0 {
				names = append(names, fmt.Sprintf("v1.%d.%d-k3s2", minor, patch))
			}
			names = append(names, fmt.Sprintf("v1.%d.%d-k3s1-amd64", minor, patch))
		}
	}
	// Make v1.33's newest v1.33.6+k3s2, the channel the bench asks for.
	kept := names[:0]
	v133 := regexp.MustCompile(`^v1\.33\.([7-9]|1[0-9]|20)-`)
	for _, n := range names {
		if !v133.MatchString(n) {
			kept = append(kept, n)
		}
	}
	names = append(kept, "v1.33.6-k3s2", "latest", "stable")
	now := time.Now()
	sd := catalog.SourceData{Source: src}
	for _, n := range names {
		t := src.Classify(n)
		t.Present, t.FirstSeen, t.LastSeen = true, resolver.InstantOf(now), resolver.InstantOf(now)
		t.Digest = resolver.ParseDigest(fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(n))))
		sd.Tags = append(sd.Tags, t)
	}
	scan := &catalog.Scan{Source: "k3s", Started: now, Finished: now, Outcome: "ok", Complete: true, TagsSeen: len(names)}
	sd.LastScan, sd.LastOK = scan, scan

	const redirect = "https://github.com/k3s-io/k3s/releases/tag/"
	channels := []catalog.Channel{
		{Name: "stable", Source: "k3s", Stream: resolver.Testing, Latest: "v1.33.6+k3s1", Redirect: redirect},
		{Name: "latest", Source: "k3s", Stream: resolver.Testing, Include: regexp.MustCompile(`.*`), Exclude: regexp.MustCompile(`^[^+]+-`), Redirect: redirect},
		{Name: "testing", Source: "k3s", Stream: resolver.Testing, Include: regexp.MustCompile(`-(alpha|beta|rc)`), Redirect: redirect},
		// Each cluster's next step, held a second after it reports a version.
		{Name: "stepwise", Source: "k3s", Stream: resolver.Released, Stepwise: true, Settle: time.Second, Redirect: redirect},
	}
	for minor := 16; minor <= 34; minor++ {
		channels = append(channels, catalog.Channel{
			Name: fmt.Sprintf("v1.%d", minor), Source: "k3s", Stream: resolver.Testing, Redirect: redirect,
			Include: regexp.MustCompile(fmt.Sprintf(`v1\.%d\..*`, minor)), Exclude: regexp.MustCompile(`^[^+]+-`),
		})
	}
	return snapshot.New(channels, []catalog.SourceData{sd}, nil, now), len(names), nil
}

// benchLifecycle ends every line up to 1.30 yesterday and 1.31 in a month
// (deprecated 60 days before): of the clusters the bench rotates
// (v1.16..v1.33), five in six get a Warning with their answer.
func benchLifecycle(now time.Time) lifecycle.Policy {
	p := lifecycle.Policy{DeprecateBefore: 60 * 24 * time.Hour, End: map[string]time.Time{}}
	for minor := 16; minor <= 30; minor++ {
		p.End[lifecycle.Name(1, minor)] = now.Add(-24 * time.Hour)
	}
	p.End["1.31"] = now.Add(30 * 24 * time.Hour)
	return p
}
