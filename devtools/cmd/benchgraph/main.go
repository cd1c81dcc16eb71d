// Command benchgraph measures the update graph and the cost of known risks
// (issue 27): the Cincinnati graph of a channel of -versions versions
// (cold: built and encoded from the snapshot; warm: served from the
// snapshot's cache), and a channel URL answering clusters that report a
// version, with -risks risks declared beside none. Everything runs in this
// process on loopback from an in-memory snapshot; requests are sequential
// on one keep-alive connection, so latencies are per request.
//
//	go run ./devtools/cmd/benchgraph -versions 10000 -risks 100
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/graph"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server"
)

func main() {
	versions := flag.Int("versions", 10000, "versions in the channel")
	perMinor := flag.Int("per-minor", 10, "patch versions per minor")
	risks := flag.Int("risks", 100, "known risks declared for the risky run")
	n := flag.Int("n", 2000, "requests per measurement")
	flag.Parse()
	if err := run(*versions, *perMinor, *risks, *n); err != nil {
		fmt.Fprintln(os.Stderr, "benchgraph:", err)
		os.Exit(1)
	}
}

func buildSnapshot(versions, perMinor, risks int) (*snapshot.Snapshot, error) {
	p, err := resolver.NewParser(resolver.SchemeSemver, `k3s(\d+)`)
	if err != nil {
		return nil, err
	}
	src := catalog.Source{Name: "k3s", Image: "docker.io/rancher/k3s-upgrade", Parser: p}
	d := catalog.SourceData{Source: src}
	seen := resolver.InstantOf(time.Now().Add(-time.Hour))
	for i := range versions {
		t := src.Classify(fmt.Sprintf("v1.%d.%d+k3s1", i/perMinor, i%perMinor))
		t.Present, t.FirstSeen, t.LastSeen = true, seen, seen
		t.Digest = resolver.ParseDigest(fmt.Sprintf("sha256:%064x", i))
		d.Tags = append(d.Tags, t)
	}
	minors := versions / perMinor
	for i := range risks {
		// Risks spread over the minors, as a long-lived source gathers
		// them: none covers the edges the measured clusters take.
		m := i * minors / max(risks, 1)
		r := catalog.Risk{Source: "k3s", Name: fmt.Sprintf("Risk%d", i), Message: "bad upgrade",
			From: fmt.Sprintf("~1.%d.0", m), To: fmt.Sprintf(">=1.%d.0 <1.%d.0", m+1, m+2), Clusters: []string{"^prod-"}}
		if i%2 == 0 {
			r.Clusters = nil
		}
		if err := r.Compile(); err != nil {
			return nil, err
		}
		d.Risks = append(d.Risks, r)
	}
	chs := []catalog.Channel{{Name: "stable", Source: "k3s", Stream: resolver.Released}}
	return snapshot.New(chs, []catalog.SourceData{d}, nil, time.Now()), nil
}

func serve(snap *snapshot.Snapshot) (string, func(), error) {
	s, err := server.New(server.Options{
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		AccessLog: server.AccessLogOff,
		Load:      func(context.Context) (*snapshot.Snapshot, error) { return snap, nil },
	})
	if err != nil {
		return "", nil, err
	}
	if err := s.Reload(context.Background()); err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Serve(ctx, ln); close(done) }()
	return "http://" + ln.Addr().String(), func() { cancel(); <-done }, nil
}

var client = &http.Client{
	Transport:     &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// measure sends n requests and returns their latencies, sorted, and the
// last body's size.
func measure(n int, req func() (*http.Request, error)) ([]time.Duration, int, error) {
	lat := make([]time.Duration, 0, n)
	size := 0
	for range n {
		r, err := req()
		if err != nil {
			return nil, 0, err
		}
		start := time.Now()
		res, err := client.Do(r)
		if err != nil {
			return nil, 0, err
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		lat = append(lat, time.Since(start))
		if err != nil {
			return nil, 0, err
		}
		if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusFound {
			return nil, 0, fmt.Errorf("%s: %d %.200s", r.URL, res.StatusCode, b)
		}
		size = len(b)
	}
	slices.Sort(lat)
	return lat, size, nil
}

func pct(lat []time.Duration, p float64) time.Duration { return lat[int(float64(len(lat)-1)*p)] }

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/1e6) }

func run(versions, perMinor, risks, n int) error {
	fmt.Printf("benchgraph: %d versions (%d per minor), %d risks, %d requests per row, %s/%s, %d CPUs, %s\n",
		versions, perMinor, risks, n, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())

	// The graph: cold is the first request of each new snapshot (built,
	// encoded, cached); warm are the requests after it.
	var cold []time.Duration
	var size int
	for range 5 {
		snap, err := buildSnapshot(versions, perMinor, risks)
		if err != nil {
			return err
		}
		base, stop, err := serve(snap)
		if err != nil {
			return err
		}
		lat, sz, err := measure(1, func() (*http.Request, error) {
			return http.NewRequest("GET", base+"/api/upgrades_info/v1/graph?channel=stable", nil)
		})
		stop()
		if err != nil {
			return err
		}
		cold, size = append(cold, lat[0]), sz
	}
	slices.Sort(cold)
	snap, err := buildSnapshot(versions, perMinor, risks)
	if err != nil {
		return err
	}
	g, _ := graph.Of(snap, "stable", "", nil, time.Now())
	conditional := 0
	for _, c := range g.Conditional {
		conditional += len(c.Edges)
	}
	base, stop, err := serve(snap)
	if err != nil {
		return err
	}
	warm, _, err := measure(n, func() (*http.Request, error) {
		return http.NewRequest("GET", base+"/api/upgrades_info/v1/graph?channel=stable", nil)
	})
	if err != nil {
		return err
	}
	// As the CVO's Go client asks: gzip, read compressed (the client
	// inflates as it reads; here the bytes on the wire are what is timed).
	warmGz, gzSize, err := measure(n, func() (*http.Request, error) {
		r, err := http.NewRequest("GET", base+"/api/upgrades_info/v1/graph?channel=stable", nil)
		if err == nil {
			r.Header.Set("Accept-Encoding", "gzip")
		}
		return r, err
	})
	if err != nil {
		return err
	}
	prod, _, err := measure(n/4, func() (*http.Request, error) {
		return http.NewRequest("GET", base+"/api/upgrades_info/v1/graph?channel=stable&id=prod-1", nil)
	})
	stop()
	if err != nil {
		return err
	}
	fmt.Printf("\ngraph: %d nodes, %d edges, %d conditional edges, %d bytes\n", len(g.Nodes), len(g.Edges), conditional, size)
	fmt.Printf("  %-34s p50 %s  p99 %s  (5 snapshots)\n", "cold (build + encode):", ms(pct(cold, 0.5)), ms(pct(cold, 0.99)))
	fmt.Printf("  %-34s p50 %s  p99 %s\n", "warm (served from the snapshot):", ms(pct(warm, 0.5)), ms(pct(warm, 0.99)))
	fmt.Printf("  %-34s p50 %s  p99 %s  (%d bytes)\n", "warm, gzip:", ms(pct(warmGz, 0.5)), ms(pct(warmGz, 0.99)), gzSize)
	fmt.Printf("  %-34s p50 %s  p99 %s\n", "warm, id=prod-1 (its own risks):", ms(pct(prod, 0.5)), ms(pct(prod, 0.99)))

	// The channel URL, asked by clusters reporting a version (the path
	// that evaluates risks), with no risk and with risks.
	fmt.Printf("\nchannel 302 to clusters reporting a version (X-SUC-Cluster-ID, X-SUC-Latest-Version):\n")
	var p50 [2]time.Duration
	for i, k := range []int{0, risks} {
		snap, err := buildSnapshot(versions, perMinor, k)
		if err != nil {
			return err
		}
		base, stop, err := serve(snap)
		if err != nil {
			return err
		}
		reported := fmt.Sprintf("v1.%d.0-k3s1", versions/perMinor-1)
		var best []time.Duration
		for range 3 { // best of three: the machine's noise is not the risks'
			lat, _, err := measure(n, func() (*http.Request, error) {
				r, err := http.NewRequest("GET", base+"/v1-release/channels/stable", nil)
				if err == nil {
					r.Header.Set("X-SUC-Cluster-ID", "prod-7")
					r.Header.Set("X-SUC-Latest-Version", reported)
				}
				return r, err
			})
			if err != nil {
				stop()
				return err
			}
			if best == nil || pct(lat, 0.5) < pct(best, 0.5) {
				best = lat
			}
		}
		stop()
		p50[i] = pct(best, 0.5)
		fmt.Printf("  %3d risks: p50 %s  p99 %s\n", k, ms(p50[i]), ms(pct(best, 0.99)))
	}
	fmt.Printf("  ratio (risks / none, p50): %.2f\n", float64(p50[1])/float64(p50[0]))
	return nil
}
