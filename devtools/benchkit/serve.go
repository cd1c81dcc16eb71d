package benchkit

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/tidemark-dev/tidemark/internal/service"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server"
)

// Serve builds a server from opts, loads its snapshot once and runs it as
// serve does (service.Run) on a loopback port; base is its URL, stop ends
// it and waits.
func Serve(ctx context.Context, opts server.Options) (base string, stop func() error, err error) {
	s, err := server.New(opts)
	if err != nil {
		return "", nil, err
	}
	if err := s.Reload(ctx); err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- service.Run(rctx, service.Options{HTTP: s, Listener: ln, Snapshots: s.Snapshots(), Fleet: s.Fleet()})
	}()
	return "http://" + ln.Addr().String(), func() error { cancel(); return <-done }, nil
}

// SemverSnapshot is one source, app, of n versions v1.0.0 to v1.<n-1>.0,
// all present now, and its channel stable on the released stream.
func SemverSnapshot(n int) *snapshot.Snapshot {
	now := time.Now()
	return snapshot.New([]catalog.Channel{{Name: "stable", Source: "app", Stream: resolver.Released}}, []catalog.SourceData{SemverSource(n, now)}, nil, now)
}

// SemverSource is SemverSnapshot's source, its tags first and last seen at
// now.
func SemverSource(n int, now time.Time) catalog.SourceData {
	p, _ := resolver.NewParser(resolver.SchemeSemver, "")
	src := catalog.Source{Name: "app", Image: "registry.example/app", Parser: p}
	sd := catalog.SourceData{Source: src}
	for i := range n {
		t := src.Classify(fmt.Sprintf("v1.%d.0", i))
		t.Present, t.FirstSeen, t.LastSeen = true, resolver.InstantOf(now), resolver.InstantOf(now)
		sd.Tags = append(sd.Tags, t)
	}
	return sd
}
