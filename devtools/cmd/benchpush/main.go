// Command benchpush measures push to served: a real distribution registry
// whose notifications point at `tidemark serve`, N pushes of new versions,
// and for each the time from the push returning to the channel URL
// answering the new version. Run it through scripts/bench-push (which
// builds tidemark and starts a throwaway Postgres).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/tidemark-dev/tidemark/internal/distreg"
	"github.com/tidemark-dev/tidemark/store"
)

func main() {
	n := flag.Int("pushes", 200, "pushes to time")
	bin := flag.String("tidemark", "tmp/tidemark", "the tidemark binary")
	verbose := flag.Bool("v", false, "tidemark's logs on stderr")
	channels := flag.Int("channels", 1, "channels following the source (latest and c-2..c-N)")
	tuf := flag.Bool("tuf", false, "serve signed answers (tuf init, then tuf: in the config): every push is also published as TUF metadata")
	flag.Parse()
	if err := run(context.Background(), *n, *bin, *verbose, *channels, *tuf); err != nil {
		fmt.Fprintln(os.Stderr, "benchpush:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, n int, bin string, verbose bool, channels int, tuf bool) error {
	dbURL := os.Getenv("DATABASE_URL")
	if dbURL == "" {
		return fmt.Errorf("set DATABASE_URL or run via scripts/bench-push")
	}
	dir, err := os.MkdirTemp("", "benchpush-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	st, err := store.Open(ctx, dbURL, nil)
	if err != nil {
		return err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return err
	}
	token, err := st.CreateToken(ctx, fmt.Sprintf("registry-%d", time.Now().UnixNano()), []string{"scan"})
	st.Close()
	if err != nil {
		return err
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	reg, err := distreg.StartWith(ctx, dir, distreg.Options{
		NotifyURL: "http://" + addr + "/api/v1/webhooks/distribution", NotifyToken: token,
	})
	if err != nil {
		return err
	}
	defer reg.Stop()
	img, err := random.Image(512, 1)
	if err != nil {
		return err
	}
	const repo = "rancher/k3s-upgrade"
	if _, err := distreg.PushImage(ctx, img, reg.Host, repo, []string{"v1.0.0-k3s1"}, 1); err != nil {
		return err
	}

	cfg := fmt.Sprintf("sources:\n  - name: k3s\n    image: %s/%s\n    scheme: semver\n    build: 'k3s(\\d+)'\n    insecure: true\n    interval: 1h\n"+
		"channels:\n  - name: latest\n    source: k3s\n", reg.Host, repo)
	for i := 2; i <= channels; i++ {
		cfg += fmt.Sprintf("  - name: c-%d\n    source: k3s\n", i)
	}
	cfgPath := filepath.Join(dir, "tidemark.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	if tuf {
		online := filepath.Join(dir, "online.pem")
		init := exec.CommandContext(ctx, bin, "tuf", "init", "--root-key", filepath.Join(dir, "root.pem"), "--online-key", online)
		init.Env = append(os.Environ(), "TIDEMARK_CONFIG="+cfgPath)
		if out, err := init.CombinedOutput(); err != nil {
			return fmt.Errorf("tidemark tuf init: %w\n%s", err, out)
		}
		cfg += "tuf:\n  online_key_file: " + online + "\n"
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			return err
		}
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	cmd := exec.CommandContext(sctx, bin, "serve", "--config", cfgPath)
	cmd.Env = append(os.Environ(), "TIDEMARK_LISTEN="+addr)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if verbose {
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	defer func() { stop(); _ = cmd.Wait() }()

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	channelURL := "http://" + addr + "/v1-release/channels/latest"
	if _, err := waitServed(client, channelURL, "v1.0.0-k3s1", 30*time.Second); err != nil {
		return fmt.Errorf("start-up scan: %w\n%s", err, logs.String())
	}
	fmt.Printf("setup: tidemark serve (%s) on %s, distribution %s on %s with notifications to\n"+
		"/api/v1/webhooks/distribution, Postgres from DATABASE_URL, %d CPUs, loopback.\n"+
		"Each push is a manifest PUT of a new version tag (blobs already present); the time runs\n"+
		"from remote.Write returning to GET /v1-release/channels/latest answering its tag\n"+
		"(polled every 0.5 ms). Pushes are sequential. %d channels follow the source; signed answers (TUF) %s.\n\n",
		bin, addr, distreg.Binary, reg.Host, runtime.NumCPU(), channels, map[bool]string{true: "on: each push is also published", false: "off"}[tuf])

	lat := make([]time.Duration, 0, n)
	for i := 1; i <= n; i++ {
		tag := fmt.Sprintf("v1.%d.%d-k3s1", 1+i/100, i%100)
		if _, err := distreg.PushImage(ctx, img, reg.Host, repo, []string{tag}, 1); err != nil {
			return err
		}
		d, err := waitServed(client, channelURL, tag, 10*time.Second)
		if err != nil {
			return fmt.Errorf("push %d (%s): %w\n%s", i, tag, err, logs.String())
		}
		lat = append(lat, d)
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(float64(len(lat))*p))] }
	fmt.Printf("%d pushes, push returned -> channel URL answers the new version:\n", n)
	fmt.Printf("  p50 %v  p90 %v  p99 %v  max %v  (goal: p99 < 250ms)\n",
		pct(0.50).Round(100*time.Microsecond), pct(0.90).Round(100*time.Microsecond),
		pct(0.99).Round(100*time.Microsecond), lat[len(lat)-1].Round(100*time.Microsecond))
	if pct(0.99) >= 250*time.Millisecond {
		return fmt.Errorf("p99 %v is over the 250ms goal", pct(0.99))
	}
	return nil
}

// waitServed polls the channel URL until its Location names tag.
func waitServed(client *http.Client, url, tag string, within time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		res, err := client.Get(url)
		if err == nil {
			res.Body.Close()
			got := strings.ReplaceAll(filepath.Base(res.Header.Get("Location")), "+", "-")
			if res.StatusCode == http.StatusFound && got == tag {
				return time.Since(start), nil
			}
		}
		if time.Since(start) > within {
			return 0, fmt.Errorf("channel URL does not answer %s after %v", tag, within)
		}
		time.Sleep(500 * time.Microsecond)
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
