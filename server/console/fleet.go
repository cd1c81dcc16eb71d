package console

import (
	"context"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/server/core"
)

// The fleet in the console: counts only. The fleet API needs a token
// because it names clusters (customer data); the console shows what the
// unauthenticated /metrics already exports (tidemark_fleet_clusters by
// channel and version) and never a cluster ID, so its pages stay readable
// without a token and without JavaScript. See docs/console.md.

// uiFleetTTL is how long the channel list's fleet counts are reused. The
// list and its 3-second poll render them; with many tabs open a replica
// still counts the fleet at most once per TTL.
const uiFleetTTL = 5 * time.Second

// uiFleetCount is one channel's clusters as the channel list shows them;
// nil on a row when the server records no fleet.
type uiFleetCount struct {
	resolver.FleetCount
	Unknown bool // counting failed (the database is down): the cell says so
}

// fleetCountsCache is the last FleetCounts answer (or failure) and when it
// was taken. One mutex: renders that find it stale wait for one count
// rather than each running their own.
type fleetCountsCache struct {
	mu     sync.Mutex
	at     time.Time
	counts map[string]resolver.FleetCount
	err    error
}

// fleetCounts is every channel's fleet counts, at most uiFleetTTL old; on
// is false when the server records no fleet.
func (s *Console) fleetCounts(ctx context.Context) (counts map[string]resolver.FleetCount, on bool, err error) {
	fs := s.Opts.Fleet.Store
	if fs == nil {
		return nil, false, nil
	}
	c := &s.uiFleet
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); c.at.IsZero() || now.Sub(c.at) >= uiFleetTTL {
		ctx, cancel := context.WithTimeout(ctx, s.Opts.DBTimeout)
		c.counts, c.err = fs.FleetCounts(ctx, now.Add(-s.FleetRec.ActiveWindow()))
		cancel()
		c.at = time.Now()
		if c.err != nil {
			s.Log.WarnContext(ctx, "console: counting the fleet failed", "err", c.err)
		}
	}
	return c.counts, true, c.err
}

// channelRows are the channel list's rows, with fleet counts when the
// server records a fleet.
func (s *Console) channelRows(ctx context.Context, v *core.View) []uiChannelRow {
	counts, on, err := s.fleetCounts(ctx)
	rows := make([]uiChannelRow, 0, len(v.List))
	for _, e := range v.List {
		r := channelRow(e)
		if on {
			r.Fleet = &uiFleetCount{FleetCount: counts[e.Ans.Channel.Name], Unknown: err != nil}
		}
		rows = append(rows, r)
	}
	return rows
}

// uiFleetChart is a channel's fleet by version, newest first: how many
// clusters report each version and how many were last answered it.
type uiFleetChart struct {
	openapi.FleetSummary
	Rows       []uiFleetBar
	NoVersion  int // clusters that never reported a version
	MaxCount   int
	Served     string // the version the channel serves now
	HasReports bool
}

type uiFleetBar struct {
	Version  string
	Reported int
	Served   int
	// Widths of the bars in percent of the largest count (0-100), so the
	// longest bar fills its track.
	ReportedPct int
	ServedPct   int
}

// channelFleet reads the channel's fleet summary through the API's own
// handler (auth is the route's middleware, not the handler's: counts are
// what /metrics exports), and shapes it as the chart's rows.
func (s *Console) channelFleet(c echo.Context, v *core.View, e *core.Entry) (*uiFleetChart, *openapi.Problem) {
	if s.Opts.Fleet.Store == nil {
		return nil, nil
	}
	name := e.Ans.Channel.Name
	ctx, cancel := context.WithTimeout(c.Request().Context(), s.Opts.DBTimeout)
	defer cancel()
	sum, err := s.FleetSummaryOf(ctx, v, name)
	if err != nil {
		return nil, problemOf(err)
	}
	ch := &uiFleetChart{FleetSummary: sum, Served: str0(core.ChannelJSON(e).Version), NoVersion: sum.Clusters}
	by := map[string]*uiFleetBar{}
	var union []resolver.VersionCount
	add := func(ver string) *uiFleetBar {
		if b, ok := by[ver]; ok {
			return b
		}
		b := &uiFleetBar{Version: ver}
		by[ver] = b
		union = append(union, resolver.VersionCount{Version: ver})
		return b
	}
	for _, vc := range sum.Versions {
		add(vc.Version).Reported = vc.Clusters
		ch.NoVersion -= vc.Clusters
		ch.HasReports = true
	}
	for _, vc := range sum.Served {
		add(vc.Version).Served = vc.Clusters
	}
	v.Snap.SortNewestFirst(name, union)
	for _, u := range union {
		b := by[u.Version]
		ch.MaxCount = max(ch.MaxCount, b.Reported, b.Served)
		ch.Rows = append(ch.Rows, *b)
	}
	for i := range ch.Rows {
		ch.Rows[i].ReportedPct = pct(ch.Rows[i].Reported, ch.MaxCount)
		ch.Rows[i].ServedPct = pct(ch.Rows[i].Served, ch.MaxCount)
	}
	return ch, nil
}

// pct is n of total in whole percent, at least 1 for any n > 0 so that a
// single cluster still shows a bar.
func pct(n, total int) int {
	if n <= 0 || total <= 0 {
		return 0
	}
	return max(1, n*100/total)
}
