package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidemark-dev/tidemark/internal/distreg"
)

func sourceName(i int) string { return fmt.Sprintf("r%04d", i) }

// writeConfig is a tidemark configuration with one source per repository
// (scanned once a day, so only the first scan happens during the bench) and
// one channel per source serving its newest version.
func writeConfig(dir, host string, repos int) (string, error) {
	var b strings.Builder
	b.WriteString("sources:\n")
	for i := range repos {
		fmt.Fprintf(&b, "  - name: %s\n    image: %s/%s\n    scheme: semver\n    insecure: true\n    interval: 24h\n",
			sourceName(i), host, repoName(i))
	}
	b.WriteString("channels:\n")
	for i := range repos {
		fmt.Fprintf(&b, "  - name: %s\n    source: %s\n", sourceName(i), sourceName(i))
	}
	path := filepath.Join(dir, "tidemark.yaml")
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

// replica is one `tidemark serve` process.
type replica struct {
	name string
	base string // http://127.0.0.1:port
	cmd  *exec.Cmd
	done chan struct{}

	mu      sync.Mutex
	reloads []time.Duration // "snapshot loaded" took=, from its JSON log
	reads   []time.Duration // its read= (the database's part), one a reload
	errors  []string
}

// startReplica starts `tidemark serve` (indexing or --no-index); a
// non-empty profile is where it writes its CPU profile until stopped (and
// its heap profile, .heap.pprof, when it stops).
func startReplica(ctx context.Context, bin, name, config, db string, index bool, profile string) (*replica, error) {
	port, err := distreg.FreePort()
	if err != nil {
		return nil, err
	}
	r := &replica{name: name, base: fmt.Sprintf("http://127.0.0.1:%d", port), done: make(chan struct{})}
	args := []string{"serve", "--config", config, "--log-format", "json"}
	if !index {
		args = append(args, "--no-index")
	}
	r.cmd = exec.Command(bin, args...)
	r.cmd.Env = append(os.Environ(), "DATABASE_URL="+db, fmt.Sprintf("TIDEMARK_LISTEN=127.0.0.1:%d", port))
	if profile != "" {
		r.cmd.Env = append(r.cmd.Env, "TIDEMARK_CPU_PROFILE="+profile, "TIDEMARK_HEAP_PROFILE="+strings.TrimSuffix(profile, ".pprof")+".heap.pprof")
	}
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go r.readLog(stderr)
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := http.Get(r.base + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return r, nil
			}
		}
		select {
		case <-r.done:
			return nil, fmt.Errorf("replica %s exited at start: %s", name, strings.Join(r.lastErrors(), "; "))
		case <-ctx.Done():
			r.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.stop()
			return nil, fmt.Errorf("replica %s not answering on %s after 60s", name, r.base)
		}
	}
}

// readLog keeps the snapshot reload times and the errors of the replica's
// JSON log; the rest (an access log line per request) is dropped.
func (r *replica) readLog(rd io.Reader) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !strings.Contains(string(line[:min(len(line), 120)]), `"snapshot loaded"`) &&
			!strings.Contains(string(line[:min(len(line), 60)]), `"ERROR"`) {
			continue
		}
		var rec struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
			Took  int64  `json:"took"`
			Read  int64  `json:"read"`
			Err   string `json:"err"`
		}
		if json.Unmarshal(line, &rec) != nil {
			continue
		}
		r.mu.Lock()
		switch {
		case rec.Msg == "snapshot loaded":
			r.reloads = append(r.reloads, time.Duration(rec.Took))
			r.reads = append(r.reads, time.Duration(rec.Read))
		case rec.Level == "ERROR":
			r.errors = append(r.errors, rec.Msg+": "+rec.Err)
		}
		r.mu.Unlock()
	}
}

func (r *replica) lastErrors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errors[max(0, len(r.errors)-3):]
}

// reloadsSince returns the reload times logged after the first n.
func (r *replica) reloadsSince(n int) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.reloads[min(n, len(r.reloads)):]...)
}

// readsSince returns the database's part of the reloads after the first n.
func (r *replica) readsSince(n int) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.reads[min(n, len(r.reads)):]...)
}

func (r *replica) reloadCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reloads)
}

// peakRSS is the replica's VmHWM (Linux).
func (r *replica) peakRSS() int64 { return procStatus(r.cmd.Process.Pid, "VmHWM:") }

// rss is the replica's VmRSS now (Linux).
func (r *replica) rss() int64 { return procStatus(r.cmd.Process.Pid, "VmRSS:") }

func (r *replica) stop() {
	_ = r.cmd.Process.Signal(os.Interrupt)
	select {
	case <-r.done:
	case <-time.After(15 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return kb << 10
		}
	}
	return -1
}
