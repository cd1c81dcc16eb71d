// Command benchtuf measures signed answers at scale: 1,000 channels
// published, then 100 pins in bursts of 10, each burst one publication.
// It prints the publication latency p50/p99, the bytes of each metadata
// file against go-tuf's default limits, and how many channels one targets
// role holds before it passes them. Needs DATABASE_URL (make bench-tuf
// starts a throwaway Postgres).
//
//	go run ./devtools/cmd/benchtuf -channels 1000 -pins 100
package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tidemark-dev/tidemark/internal/tufpub"
	"github.com/tidemark-dev/tidemark/resolver/signed"
	"github.com/tidemark-dev/tidemark/store"
)

// go-tuf v2's default size limits (metadata/config.New).
const (
	limitRoot      = 512000
	limitTimestamp = 16384
	limitSnapshot  = 2000000
	limitTargets   = 5000000
)

func main() {
	channels := flag.Int("channels", 1000, "channels to publish")
	pins := flag.Int("pins", 100, "pins, in bursts of 10")
	flag.Parse()
	if err := run(context.Background(), *channels, *pins); err != nil {
		fmt.Fprintln(os.Stderr, "benchtuf:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, n, pins int) error {
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		return errors.New("set DATABASE_URL (make bench-tuf starts a throwaway Postgres)")
	}
	st, err := store.Open(ctx, url, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	_, rootKey, _ := ed25519.GenerateKey(rand.Reader)
	_, online, _ := ed25519.GenerateKey(rand.Reader)
	root, err := tufpub.Root(rootKey, online, tufpub.DefaultExpires, time.Now())
	if err != nil {
		return err
	}
	if err := st.InitTUF(ctx, root); err != nil {
		return fmt.Errorf("%w (the bench wants a fresh database)", err)
	}
	p := &tufpub.Publisher{Store: st, Online: online, Expires: tufpub.DefaultExpires, Now: time.Now}
	answers := make([]signed.Answer, n)
	for i := range answers {
		answers[i] = answer(fmt.Sprintf("channel-%04d", i), "1.0.0")
	}
	start := time.Now()
	if _, err := p.Publish(ctx, answers); err != nil {
		return err
	}
	first := time.Since(start)
	var lat []time.Duration
	for b := 0; b < pins/10; b++ {
		for k := range 10 {
			i := (b*10 + k) * 7 % n
			answers[i] = answer(answers[i].Channel, fmt.Sprintf("1.0.%d", b+1))
		}
		t := time.Now()
		if _, err := p.Publish(ctx, answers); err != nil {
			return err
		}
		lat = append(lat, time.Since(t))
	}
	slices.Sort(lat)
	fmt.Printf("tuf: %d channels, %d pins in %d bursts of 10 (one publication each), one Postgres on this machine\n", n, pins, len(lat))
	fmt.Printf("%-34s %s\n", "first publication (all channels)", first.Round(time.Millisecond))
	fmt.Printf("%-34s p50 %s, p99 %s (a publication reads, signs and writes in one transaction)\n", "publication after a burst of pins",
		lat[len(lat)/2].Round(100*time.Microsecond), lat[min(len(lat)-1, len(lat)*99/100)].Round(100*time.Microsecond))
	var missed []string
	perChannel := 0.0
	for _, c := range []struct {
		role  string
		limit int
	}{{signed.Root, limitRoot}, {signed.Timestamp, limitTimestamp}, {signed.Snapshot, limitSnapshot}, {signed.Targets, limitTargets}} {
		m, err := st.TUFMeta(ctx, c.role, 0)
		if err != nil {
			return err
		}
		fmt.Printf("%-34s %d bytes (go-tuf's default limit %d)\n", c.role+".json", len(m.Body), c.limit)
		if len(m.Body) > c.limit {
			missed = append(missed, c.role+" over its limit")
		}
		if c.role == signed.Targets {
			perChannel = float64(len(m.Body)) / float64(n)
		}
	}
	fmt.Printf("%-34s ~%.0f bytes a channel: one targets role holds ~%d channels before go-tuf's %d-byte limit\n", "targets per channel",
		perChannel, int(float64(limitTargets)/perChannel), limitTargets)
	if lat[min(len(lat)-1, len(lat)*99/100)] > time.Second {
		missed = append(missed, "publication p99 over 1 s")
	}
	if len(missed) > 0 {
		fmt.Println("GOAL MISSED: " + strings.Join(missed, "; "))
		return errors.New("goal missed")
	}
	fmt.Println("goals met: publication p99 <= 1 s, every file within go-tuf's default limits")
	return nil
}

func answer(channel, version string) signed.Answer {
	v := &signed.Version{Version: version, Tag: "v" + version, Digest: "sha256:" + strings.Repeat("ab", 32)}
	return signed.Answer{Channel: channel, Answer: v, Served: []signed.Version{*v}}
}
