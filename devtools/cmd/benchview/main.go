// Command benchview measures the registry view (issue 28) beside the
// upstream it serves: a Debian distribution registry holding -tags tags
// (one image), and Tidemark's view of a channel serving all of them, both
// on loopback. For tags/list (the whole list) and a manifest HEAD by tag
// it prints p50/p99 of sequential requests and the requests/s of
// -workers concurrent ones, for the view and the upstream, and their
// ratio.
//
//	go run ./devtools/cmd/benchview -tags 10000
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemark-dev/tidemark/devtools/benchkit"
	"github.com/tidemark-dev/tidemark/internal/distreg"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server"
	"github.com/tidemark-dev/tidemark/server/registryview"
)

func main() {
	tags := flag.Int("tags", 10000, "versions in the channel (tags upstream)")
	n := flag.Int("n", 500, "sequential requests per latency row")
	workers := flag.Int("workers", 8, "concurrent clients for requests/s")
	dur := flag.Duration("duration", 5*time.Second, "length of each requests/s run")
	flag.Parse()
	if err := run(*tags, *n, *workers, *dur); err != nil {
		fmt.Fprintln(os.Stderr, "benchview:", err)
		os.Exit(1)
	}
}

const repo = "rancher/k3s-upgrade"

func run(count, n, workers int, dur time.Duration) error {
	ctx := context.Background()
	reg, err := distreg.Start(ctx, "")
	if err != nil {
		return err
	}
	defer reg.Stop()
	var tags []string
	for i := range count {
		tags = append(tags, fmt.Sprintf("v1.%d.%d-k3s1", i/100, i%100))
	}
	start := time.Now()
	digest, err := distreg.Push(ctx, reg.Host, repo, tags, 16)
	if err != nil {
		return err
	}
	fmt.Printf("benchview: %d tags pushed to a Debian docker-registry in %s; %s/%s, %d CPUs, %s\n",
		count, time.Since(start).Round(time.Millisecond), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())

	p, err := resolver.NewParser(resolver.SchemeSemver, `k3s(\d+)`)
	if err != nil {
		return err
	}
	src := catalog.Source{Name: "k3s", Image: reg.Host + "/" + repo, Parser: p}
	d := catalog.SourceData{Source: src}
	seen := resolver.InstantOf(time.Now().Add(-time.Hour))
	for _, t := range tags {
		tag := src.Classify(t)
		tag.Present, tag.Digest, tag.FirstSeen, tag.LastSeen = true, resolver.ParseDigest(digest.String()), seen, seen
		d.Tags = append(d.Tags, tag)
	}
	snap := snapshot.New([]catalog.Channel{{Name: "stable", Source: "k3s", Stream: resolver.Released}}, []catalog.SourceData{d}, nil, time.Now())
	base, stop, err := benchkit.Serve(ctx, server.Options{
		Log:          slog.New(slog.NewTextHandler(io.Discard, nil)),
		AccessLog:    server.AccessLogOff,
		Load:         func(context.Context) (*snapshot.Snapshot, error) { return snap, nil },
		RegistryView: registryview.Options{Sources: []registryview.Source{{Name: "k3s", Image: src.Image, Insecure: true}}},
	})
	if err != nil {
		return err
	}
	defer stop()
	view := base + "/v2/channels/stable"
	up := "http://" + reg.Host + "/v2/" + repo
	last := tags[len(tags)-1]

	fmt.Printf("\n%-22s %-9s %12s %12s %12s\n", "call", "where", "p50", "p99", "req/s")
	for _, call := range []struct{ name, method, path string }{
		{"tags/list (all)", http.MethodGet, "/tags/list"},
		{"tags/list?n=100", http.MethodGet, "/tags/list?n=100"},
		{"HEAD manifest by tag", http.MethodHead, "/manifests/" + last},
	} {
		var p50s, rates [2]float64
		for i, base := range []string{view, up} {
			where := [2]string{"tidemark", "upstream"}[i]
			lat, size, err := sequential(n, call.method, base+call.path)
			if err != nil {
				return fmt.Errorf("%s %s: %w", where, call.name, err)
			}
			rate, err := throughput(workers, dur, call.method, base+call.path)
			if err != nil {
				return err
			}
			p50s[i], rates[i] = float64(pct(lat, .5)), rate
			fmt.Printf("%-22s %-9s %12s %12s %12.0f   (%d bytes)\n", call.name, where, ms(pct(lat, .5)), ms(pct(lat, .99)), rate, size)
		}
		fmt.Printf("%-22s %-9s %12.2fx %12s %12.2fx\n", "", "ratio", p50s[1]/p50s[0], "", rates[0]/rates[1])
	}
	fmt.Println("\nratio: upstream p50 / Tidemark p50, and Tidemark req/s / upstream req/s (above 1: Tidemark is faster)")
	return nil
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

func do(method, url string) (int, error) {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json")
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s %s: %s", method, url, res.Status)
	}
	return int(n), err
}

func sequential(n int, method, url string) ([]time.Duration, int, error) {
	lat := make([]time.Duration, 0, n)
	size := 0
	for range n {
		t := time.Now()
		sz, err := do(method, url)
		if err != nil {
			return nil, 0, err
		}
		lat, size = append(lat, time.Since(t)), sz
	}
	slices.Sort(lat)
	return lat, size, nil
}

func throughput(workers int, d time.Duration, method, url string) (float64, error) {
	var count atomic.Int64
	var firstErr error
	var once sync.Once
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for time.Now().Before(end) {
				if _, err := do(method, url); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				count.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(count.Load()) / d.Seconds(), firstErr
}

func pct(lat []time.Duration, p float64) time.Duration { return lat[int(float64(len(lat)-1)*p)] }

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/1e6) }
