// Command benchschedule measures scheduled changes (issue 29): -changes
// pins, one per channel, all due at the same moment, with two replicas'
// governors (two stores on one Postgres, as two serve processes have)
// racing to apply them. It prints how late each was applied (the audit
// event's time minus the change's), p50/p99/max, and how many pins were
// recorded: exactly one per change, or the run fails.
//
//	scripts/with-pg go run ./devtools/cmd/benchschedule -changes 100
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/tidemark-dev/tidemark/internal/governor"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/store"
)

func main() {
	n := flag.Int("changes", 100, "changes due at the same moment")
	flag.Parse()
	if err := run(*n); err != nil {
		fmt.Fprintln(os.Stderr, "benchschedule:", err)
		os.Exit(1)
	}
}

func run(n int) error {
	ctx := context.Background()
	db := os.Getenv("DATABASE_URL")
	if db == "" {
		return fmt.Errorf("set DATABASE_URL or run via scripts/with-pg")
	}
	var stores []*store.Store
	for range 2 {
		st, err := store.Open(ctx, db, nil)
		if err != nil {
			return err
		}
		defer st.Close()
		stores = append(stores, st)
	}
	st := stores[0]
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	p, err := resolver.NewParser(resolver.SchemeSemver, `k3s(\d+)`)
	if err != nil {
		return err
	}
	src := catalog.Source{Name: "k3s", Image: "docker.io/rancher/k3s-upgrade", Parser: p}
	if err := st.SyncSources(ctx, []catalog.Source{src}); err != nil {
		return err
	}
	var tags []resolver.Tag
	for _, name := range []string{"v1.33.5+k3s1", "v1.33.6+k3s1"} {
		tags = append(tags, src.Classify(name))
	}
	if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "k3s", Complete: true, Tags: tags}); err != nil {
		return err
	}
	var chs []catalog.Channel
	for i := range n {
		chs = append(chs, catalog.Channel{Name: fmt.Sprintf("c%03d", i), Source: "k3s", Stream: resolver.Released})
	}
	at := time.Now().Add(3 * time.Second).Truncate(time.Second)
	for _, ch := range chs {
		if _, err := st.ScheduleChange(ctx, resolver.ScheduledChange{Channel: ch.Name, Action: "pin", Version: "v1.33.5+k3s1",
			At: at, State: resolver.ChangeScheduled, RequestedBy: "bench"}); err != nil {
			return err
		}
	}
	fmt.Printf("benchschedule: %d pins due at %s, two replicas' governors (1 s tick); %s/%s, %d CPUs, %s\n",
		n, at.Format(time.RFC3339), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())

	gctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for i, s := range stores {
		snap := func() *snapshot.Snapshot {
			data, states, err := s.Load(ctx, []catalog.Source{src})
			if err != nil {
				return nil
			}
			return snapshot.New(chs, data, states, time.Now())
		}
		o := governor.Options{Store: s, Snapshot: snap, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		// The replicas' ticks are not in step, as two processes' are not.
		time.Sleep(time.Duration(i) * 437 * time.Millisecond)
		wg.Go(func() { governor.Run(gctx, o) })
	}
	deadline := at.Add(30 * time.Second)
	for time.Now().Before(deadline) {
		done, err := st.Changes(ctx, resolver.ChangeDone, n+1)
		if err != nil {
			return err
		}
		if len(done) == n {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	wg.Wait()
	var late []time.Duration
	pins := 0
	for _, ch := range chs {
		events, err := st.History(ctx, ch.Name)
		if err != nil {
			return err
		}
		for _, e := range events {
			if e.Action == "pin" {
				pins++
				late = append(late, e.At.Sub(at))
			}
		}
	}
	if len(late) == 0 {
		return fmt.Errorf("no change applied within 30 s")
	}
	slices.Sort(late)
	pct := func(p float64) time.Duration { return late[int(float64(len(late)-1)*p)].Round(time.Millisecond) }
	fmt.Printf("applied: %d of %d; pins recorded: %d (want exactly %d)\n", len(late), n, pins, n)
	fmt.Printf("lateness: p50 %s  p99 %s  max %s  (goal: p99 within 5 s)\n", pct(0.5), pct(0.99), pct(1))
	if pins != n {
		return fmt.Errorf("%d pins recorded for %d changes", pins, n)
	}
	return nil
}
