// Command testprogress reads `go test -json` on stdin and prints what a
// person watching make test wants: each package as it finishes (ok or
// FAIL, with its time), the whole output of every failed test, and, while
// packages run with nothing finishing, a line every -every naming the
// tests running longest, so that a run is never silent for minutes. It
// exits 1 when a test or a build failed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type progress struct {
	mu      sync.Mutex
	w       io.Writer
	now     func() time.Time
	prefix  string
	started map[string]time.Time // running tests (package + " " + test) and packages
	output  map[string][]string  // a running test's or package's output
	failed  bool
	done    int
	last    time.Time                // when the last line was printed
	pkgs    map[string]time.Duration // finished packages' times
}

func main() {
	every := flag.Duration("every", 30*time.Second, "with nothing finished for this long, say what still runs")
	prefix := flag.String("trim", "github.com/tidemark-dev/tidemark/", "package path prefix to leave out")
	flag.Parse()
	p := newProgress(os.Stdout, time.Now, *prefix)
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(*every / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.heartbeat(*every)
			}
		}
	}()
	ok := p.read(os.Stdin)
	close(stop)
	if !ok {
		os.Exit(1)
	}
}

func newProgress(w io.Writer, now func() time.Time, prefix string) *progress {
	return &progress{w: w, now: now, prefix: prefix, started: map[string]time.Time{}, output: map[string][]string{},
		last: now(), pkgs: map[string]time.Duration{}}
}

// read handles every event of r and reports whether everything passed.
func (p *progress) read(r io.Reader) bool {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			// Not an event (a build error go test printed as text): pass it on.
			p.print("%s\n", sc.Text())
			continue
		}
		p.handle(e)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "testprogress: %d packages", p.done)
	if p.failed {
		fmt.Fprint(p.w, ", FAILED")
	}
	fmt.Fprintln(p.w)
	return !p.failed
}

func (p *progress) print(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, a...)
	p.last = p.now()
}

func (p *progress) handle(e event) {
	pkg := strings.TrimPrefix(e.Package, p.prefix)
	key := pkg
	if e.Test != "" {
		key += " " + e.Test
	}
	p.mu.Lock()
	switch e.Action {
	case "start", "run":
		p.started[key] = p.now()
	case "output":
		p.output[key] = append(p.output[key], e.Output)
	}
	p.mu.Unlock()
	switch {
	case e.Action == "build-output":
		p.print("%s", e.Output)
	case e.Action == "build-fail":
		p.mu.Lock()
		p.failed = true
		p.mu.Unlock()
	case e.Action == "fail" && e.Test != "":
		p.mu.Lock()
		p.failed = true
		out := strings.Join(p.output[key], "")
		p.mu.Unlock()
		p.print("--- FAIL: %s (%.1fs)\n%s", key, e.Elapsed, out)
	case (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") && e.Test == "":
		p.mu.Lock()
		p.done++
		p.pkgs[pkg] = time.Duration(e.Elapsed * float64(time.Second))
		out := ""
		if e.Action == "fail" {
			p.failed = true
			out = strings.Join(p.output[key], "") // a build failure, a panic outside a test
		}
		p.mu.Unlock()
		word := map[string]string{"pass": "ok  ", "fail": "FAIL", "skip": "?   "}[e.Action]
		if e.Action == "fail" {
			p.print("%s\t%s\t%.1fs\n%s", word, pkg, e.Elapsed, out)
		} else if e.Action == "pass" {
			p.print("%s\t%s\t%.1fs\n", word, pkg, e.Elapsed)
		}
	}
	if e.Action == "pass" || e.Action == "fail" || e.Action == "skip" {
		p.mu.Lock()
		delete(p.started, key)
		delete(p.output, key)
		p.mu.Unlock()
	}
}

// heartbeat says what still runs when nothing was printed for every.
func (p *progress) heartbeat(every time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if now.Sub(p.last) < every || len(p.started) == 0 {
		return
	}
	type run struct {
		name string
		for_ time.Duration
	}
	var tests []run
	for k, at := range p.started {
		if strings.Contains(k, " ") && !strings.Contains(k[strings.Index(k, " "):], "/") {
			tests = append(tests, run{k, now.Sub(at)})
		}
	}
	sort.Slice(tests, func(i, j int) bool { return tests[i].for_ > tests[j].for_ })
	var parts []string
	for i, r := range tests {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("and %d more", len(tests)-4))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", r.name, r.for_.Round(time.Second)))
	}
	if len(parts) == 0 {
		parts = []string{"building"}
	}
	fmt.Fprintf(p.w, "... %d packages done; running: %s\n", p.done, strings.Join(parts, ", "))
	p.last = now
}
