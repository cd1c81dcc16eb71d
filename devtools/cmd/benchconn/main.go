// Command benchconn measures what idle connections cost a replica: one
// loopback address (127.0.0.2) opens -conns connections and leaves them
// idle while another (127.0.0.1) asks a channel URL every 10 ms. It prints
// the replica's peak RSS, the refused counts from its /metrics and the
// other address's p50/p99, and judges them against the goals (RSS < 150
// MB, p99 < 100 ms). The replica runs in a process of its own (this
// program with -serve), with the shipped connection limits.
//
// With -addresses, many addresses each hold -per idle keep-alive
// connections, more than max_connections in all (many.go).
//
//	go run ./devtools/cmd/benchconn -conns 20000 -hold 10s
//	go run ./devtools/cmd/benchconn -addresses 50 -per 250 -hold 10s -after 1m
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemark-dev/tidemark/devtools/benchkit"
	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/internal/service"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server"
	"github.com/tidemark-dev/tidemark/server/connlimit"
)

func main() {
	serve := flag.Bool("serve", false, "run the replica (used by the bench itself)")
	container := flag.Int64("container-memory", shippedMemory, "the replica's container memory limit in bytes, of which it takes 90 % as Go's soft limit as serve does (0: none)")
	flood := flag.Int("flood", 0, "open this many idle connections to -to and hold them until stdin closes (used by the bench itself)")
	to := flag.String("to", "", "the replica's host:port, for -flood")
	conns := flag.Int("conns", 20000, "idle connections one address opens")
	hold := flag.Duration("hold", 10*time.Second, "how long they are held once open")
	unlimited := flag.Bool("unlimited", false, "the replica runs without connection limits: the baseline before them")
	var many manyOpts
	flag.IntVar(&many.addresses, "addresses", 0, "many-address mode: this many source addresses (127.N.0.2, one /24 each), -per idle connections each")
	flag.IntVar(&many.per, "per", 250, "idle keep-alive connections per address, in many-address mode")
	flag.DurationVar(&many.after, "after", time.Minute, "how long after the flood RSS is read again, in many-address mode")
	flag.DurationVar(&many.reopen, "reopen", time.Second, "a flood connection the replica closes is reopened after this, in many-address mode")
	floodfrom := flag.String("floodfrom", "", "hold -per connections from each of these addresses (comma-separated) to -to until stdin closes (used by the bench itself)")
	flag.Parse()
	many.hold = *hold
	ctx := context.Background()
	var err error
	switch {
	case *serve:
		err = child(ctx, *unlimited, *container)
	case *flood > 0:
		err = flooder(ctx, *flood, *to)
	case *floodfrom != "":
		err = floodFrom(ctx, strings.Split(*floodfrom, ","), many.per, many.reopen, *to)
	case many.addresses > 0:
		many.container = *container
		err = runMany(many)
	default:
		err = run(ctx, *conns, *hold, *unlimited, *container)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchconn:", err)
		os.Exit(1)
	}
}

// shippedMemory is the memory limit the Helm chart and the Kubernetes
// manifests give a replica (256Mi); serve takes 90 % of its container's
// limit as Go's soft memory limit (cmd/tidemark/memlimit.go).
const shippedMemory = 256 << 20

// child serves one channel with the shipped limits on 127.0.0.1 until its
// stdin closes.
func child(ctx context.Context, unlimited bool, container int64) error {
	if container > 0 {
		debug.SetMemoryLimit(container * 9 / 10)
	}
	p, _ := resolver.NewParser(resolver.SchemeSemver, "")
	src := catalog.Source{Name: "app", Image: "registry.example/app", Parser: p}
	now := time.Now()
	sd := catalog.SourceData{Source: src}
	for i := range 40 {
		t := src.Classify(fmt.Sprintf("v1.%d.0", i))
		t.Present, t.FirstSeen, t.LastSeen = true, resolver.InstantOf(now), resolver.InstantOf(now)
		sd.Tags = append(sd.Tags, t)
	}
	snap := snapshot.New([]catalog.Channel{{Name: "stable", Source: "app", Stream: resolver.Released}}, []catalog.SourceData{sd}, nil, now)
	limits := connlimit.Options{Max: config.DefaultMaxConnections, PerAddress: config.DefaultMaxConnectionsPerAddress,
		PerNetwork: config.DefaultMaxConnectionsPerNetwork}
	if unlimited {
		limits = connlimit.Options{Max: -1, PerAddress: -1, PerNetwork: -1}
	}
	s, err := server.New(server.Options{
		Log:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		Load:        func(context.Context) (*snapshot.Snapshot, error) { return snap, nil },
		Connections: limits,
		IdleTimeout: config.DefaultIdleTimeout,
	})
	if err != nil {
		return err
	}
	if err := s.Reload(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- service.Run(rctx, service.Options{HTTP: s, Listener: ln, Snapshots: s.Snapshots(), Fleet: s.Fleet()})
	}()
	fmt.Println("http://" + ln.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin)
	cancel()
	return <-done
}

// replica is the replica's process (this program with -serve).
type replica struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	base  string
}

// startReplica runs the replica and waits for its URL.
func startReplica(self string, unlimited bool, container int64) (*replica, error) {
	cmd := exec.Command(self, "-serve", "-container-memory", strconv.FormatInt(container, 10))
	if unlimited {
		cmd.Args = append(cmd.Args, "-unlimited")
	}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &replica{cmd: cmd, stdin: stdin}
	base, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		r.stop()
		return nil, fmt.Errorf("the replica did not start: %w", err)
	}
	r.base = strings.TrimSpace(base)
	return r, nil
}

func (r *replica) stop() { r.stdin.Close(); _ = r.cmd.Wait() }

func run(ctx context.Context, n int, hold time.Duration, unlimited bool, container int64) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	r, err := startReplica(self, unlimited, container)
	if err != nil {
		return err
	}
	defer r.stop()
	cmd, base := r.cmd, r.base
	hostport := strings.TrimPrefix(base, "http://")
	if unlimited {
		fmt.Println("connections: the replica runs WITHOUT connection limits (the baseline)")
	}
	fmt.Printf("connections: %d idle connections from 127.0.0.2 held %s, a channel URL from 127.0.0.1 every 10 ms; limits as shipped (%d total, %d per address, idle %s); %d cores, loopback\n",
		n, hold, config.DefaultMaxConnections, config.DefaultMaxConnectionsPerAddress, config.DefaultIdleTimeout, numCPU())

	// The other address: every 10 ms, on a keep-alive connection of its own.
	stop := make(chan struct{})
	other := newProbe(base, true)
	var wg sync.WaitGroup
	wg.Go(func() { other.every(10*time.Millisecond, stop) })

	// The flood: n connections from one address, left idle, in processes
	// of floodPer each (a process's open files are limited, and raising
	// the hard limit needs a privilege containers often lack).
	start := time.Now()
	var open, dialErrs int64
	var flooders []*exec.Cmd
	var fins []io.WriteCloser
	for left := n; left > 0; left -= floodPer {
		f, fin, o, e, err := startFlooder(self, "-flood", strconv.Itoa(min(left, floodPer)), "-to", hostport)
		if err != nil {
			return err
		}
		flooders, fins = append(flooders, f), append(fins, fin)
		open, dialErrs = open+o, dialErrs+e
	}
	opened := time.Since(start)
	time.Sleep(hold)
	metrics := endFlood(stop, &wg, base, flooders, fins)

	rss := benchkit.PeakRSS(cmd.Process.Pid)
	lat := other.latencies()
	p50, p99 := pct(lat, 50), pct(lat, 99)
	fmt.Printf("%-34s %d of %d in %s (%d dial errors)\n", "flood connections opened", open, n, opened.Round(time.Millisecond), dialErrs)
	fmt.Printf("%-34s %s\n", "refused (total, address)", refused(metrics, "total")+", "+refused(metrics, "address"))
	fmt.Printf("%-34s %.1f MB\n", "replica peak RSS", float64(rss)/1e6)
	fmt.Printf("%-34s %d answered, %d failed, p50 %s, p99 %s\n", "other address (every 10 ms)", len(lat), other.failed.Load(), ms(p50), ms(p99))
	var missed []string
	if rss >= 150e6 {
		missed = append(missed, fmt.Sprintf("peak RSS %.1f MB >= 150 MB", float64(rss)/1e6))
	}
	if p99 >= 100*time.Millisecond || len(lat) == 0 {
		missed = append(missed, fmt.Sprintf("p99 %s >= 100 ms", ms(p99)))
	}
	if n := other.failed.Load(); n > 0 {
		missed = append(missed, fmt.Sprintf("%d requests from the other address failed", n))
	}
	if len(missed) > 0 {
		fmt.Printf("GOAL MISSED: %s\n", strings.Join(missed, "; "))
		return errors.New("goal missed")
	}
	fmt.Println("goals met: RSS < 150 MB, p99 < 100 ms")
	return nil
}

// floodPer is how many connections one flooder process holds.
const floodPer = 10000

// flooder opens n connections from 127.0.0.2 to hostport, sixteen dials at
// once, prints how many opened and failed, and holds them until its stdin
// closes.
func flooder(ctx context.Context, n int, hostport string) error {
	held := make([]net.Conn, n)
	var next, opened, failed atomic.Int64
	var dialers sync.WaitGroup
	for range 16 {
		dialers.Go(func() {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 5 * time.Second}
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				c, err := d.DialContext(ctx, "tcp", hostport)
				if err != nil {
					failed.Add(1)
					continue
				}
				held[i] = c
				opened.Add(1)
			}
		})
	}
	dialers.Wait()
	fmt.Println(opened.Load(), failed.Load())
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range held {
		if c != nil {
			c.Close()
		}
	}
	return nil
}

// refused is the refused-connection count for reason, "?" when absent.
func refused(metrics, reason string) string {
	if v, ok := benchkit.Metric(metrics, `tidemark_connections_refused_total{reason="`+reason+`"}`); ok {
		return v
	}
	return "?"
}

func pct(xs []time.Duration, p int) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	return xs[min(len(xs)-1, len(xs)*p/100)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}

// startFlooder starts this program as a flooder with args and reads the
// line it prints once its connections are open: how many opened and how
// many failed. Writing to (or closing) fin tells it to let them go.
func startFlooder(self string, args ...string) (f *exec.Cmd, fin io.WriteCloser, opened, failed int64, err error) {
	f = exec.Command(self, args...)
	f.Stderr = os.Stderr
	if fin, err = f.StdinPipe(); err != nil {
		return nil, nil, 0, 0, err
	}
	fout, err := f.StdoutPipe()
	if err != nil {
		return nil, nil, 0, 0, err
	}
	if err := f.Start(); err != nil {
		return nil, nil, 0, 0, err
	}
	line, _ := bufio.NewReader(fout).ReadString('\n')
	if _, err := fmt.Sscanf(line, "%d %d", &opened, &failed); err != nil {
		return f, fin, 0, 0, fmt.Errorf("a flooder said %q: %w", line, err)
	}
	return f, fin, opened, failed, nil
}

// endFlood stops the probes (stop, wg), scrapes the replica's metrics
// while the flood still holds, then lets the flooders go.
func endFlood(stop chan struct{}, wg *sync.WaitGroup, base string, flooders []*exec.Cmd, fins []io.WriteCloser) string {
	close(stop)
	wg.Wait()
	metrics := benchkit.Scrape(base)
	for i, f := range flooders {
		fins[i].Close()
		_ = f.Wait()
	}
	return metrics
}
