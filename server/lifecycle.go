package server

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/server/core"
	"github.com/tidemark-dev/tidemark/server/lineview"
)

// LineClusters counts the whole fleet's active clusters on line of source
// now: a line event's data (notify.Deliverer.SetLineClusters).
func (s *Server) LineClusters(ctx context.Context, source, line string) (int, error) {
	return lineview.For(s.Server).Clusters(ctx, source, line)
}

// withRunning is e as the answer to a cluster reporting reported: e
// itself when that version's line is supported (or unknown), else a copy
// that carries it (the Warning, running). One map lookup on the way.
func withRunning(v *core.View, e *core.Entry, reported resolver.Version) *core.Entry {
	l := core.EndingLine(v.Snap.Lines().LineOf(e.Ans.Channel.Source, reported))
	if l == nil {
		return e
	}
	c := *e
	c.Running, c.RunningVersion = l, reported.String()
	return &c
}

// warning is the Warning header of e's answer (RFC 9111's 299, the one
// Kubernetes sends for deprecations); nil when the cluster's line is
// supported.
func warning(e *core.Entry) []string {
	if e.Running == nil {
		return nil
	}
	return []string{`299 tidemark "` + e.Running.Warning(e.RunningVersion) + `"`}
}

// newForced is tidemark_lifecycle_forced_total.
func newForced(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tidemark_lifecycle_forced_total",
		Help: "Answers that directed a cluster off an expired line (lifecycle: {upgrade_expired: true}), by channel.",
	}, []string{"channel"})
	return c, reg.Register(c)
}
