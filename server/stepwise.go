package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server/core"
)

// clusterAnswer is the answer of channel entry e to request r: e itself for
// a plain channel, the cluster's next step for a stepwise one (CONTRACT
// section 6). A request from a cluster (X-SUC-Cluster-ID) is recorded in
// the fleet on the way, off the request path. The work is bounded: header
// reads, map lookups (the reported version in the index, its step in the
// view), and a parse when the version was never indexed.
func (s *Server) clusterAnswer(r *http.Request, v *core.View, e *core.Entry) (*core.Entry, error) {
	id := clusterID(r)
	ch := &e.Ans.Channel
	if id == "" && !ch.Stepwise && e.Ans.Rollout == nil && !reportsVersion(r) {
		// The plain hot path: nothing to read or record.
		if e.Ans.Tag == nil {
			return nil, noAnswer(e.Ans)
		}
		return e, nil
	}
	now := time.Now()
	reported, ok := reportedVersion(r, v, ch.Name)
	sighting := resolver.Sighting{Cluster: id, Channel: ch.Name, At: now}
	if ok {
		sighting.Reported = reported.String()
	} else if id != "" && !ch.Stepwise {
		// A cluster that names itself but reports nothing runs, as far as
		// Tidemark knows, what it was last answered: it is never answered
		// an older one without a rollback. (Not recorded as reported.)
		if last, found := s.FleetRec.LastAnswered(ch.Name, id); found {
			reported, ok = v.Snap.Reported(ch.Name, last)
		}
	}
	// An ID over the admission limits is answered as any request is, but
	// neither recorded nor given a settle clock (memory stays bounded).
	addr := s.ClientAddr(r)
	admitted := id != "" && s.FleetRec.Admitted(ch.Name, id, addr, now)
	ans, err := s.answerFor(r.Context(), v, e, id, admitted, reported, ok, now)
	if sighting.Reported != "" && ans != nil {
		ans = withRunning(v, ans, reported) // its line's warning, if it ends
	}
	if admitted {
		if ans != nil {
			sighting.Served, sighting.Forced = ans.Version, ans.Forced
		}
		sighting.Outside = !s.FleetRec.Counts(addr)
		s.FleetRec.Record(sighting)
	}
	return ans, err
}

// answerFor turns the domain's decision for this cluster
// (Snapshot.ClusterAnswer) into the entry to send. The settle clock is this
// replica's fleet record of the cluster; one not admitted has none and is
// held.
func (s *Server) answerFor(ctx context.Context, v *core.View, e *core.Entry, id string, admitted bool, reported resolver.Version, ok bool, now time.Time) (*core.Entry, error) {
	ch := &e.Ans.Channel
	if e.Ans.Tag == nil {
		return nil, noAnswer(e.Ans)
	}
	q := snapshot.Asker{ID: id, Reported: reported, HasReported: ok, Now: now}
	if ok && snapshot.Settles(ch, id) {
		if q.Unsettled = !admitted; admitted {
			q.Since = s.FleetRec.Since(ctx, ch.Name, id, reported.String(), now)
		}
	}
	tag, held, err := v.Snap.ClusterAnswer(ch.Name, q)
	if errors.Is(err, snapshot.ErrNoReportedVersion) {
		return nil, &core.ProblemAnswer{Err: fmt.Errorf("%w: channel %q is stepwise: it answers each cluster with its next step from the version it runs, "+
			"and this request reports none; add ?current=<version> to the channel URL (the Plan's spec.channel), "+
			"or use system-upgrade-controller, which sends X-SUC-Latest-Version after its first answer", resolver.ErrNotFound, ch.Name)}
	}
	if err != nil {
		return nil, err
	}
	if f := forced(v, ch.Name, q, tag, held); f != "" {
		s.forced.WithLabelValues(ch.Name).Inc()
		fe := *e.EntryFor(&tag, s.Opts.ExternalURL)
		fe.Forced = f
		return &fe, nil
	}
	if held != "" {
		s.Metrics.HeldAnswer(ch.Name, held)
		he := *e.EntryFor(&tag, s.Opts.ExternalURL)
		he.Held = held
		return &he, nil
	}
	return e.EntryFor(&tag, s.Opts.ExternalURL), nil
}

// reportsVersion says whether r reports the version its cluster runs: a
// channel must then never answer an older one (CONTRACT section 13).
func reportsVersion(r *http.Request) bool {
	if h := r.Header["X-Suc-Latest-Version"]; len(h) > 0 && h[0] != "" {
		return true
	}
	return r.URL.RawQuery != "" && r.URL.Query().Get("current") != ""
}

// reportedVersion is the version a request reports: X-SUC-Latest-Version,
// else ?current=, read with the channel's source's scheme (a tag such as
// v1.33.6-k3s1 works); ok is false when neither parses.
func reportedVersion(r *http.Request, v *core.View, channel string) (resolver.Version, bool) {
	// Longer than 128 characters counts as absent (CONTRACT section 12).
	if h := r.Header["X-Suc-Latest-Version"]; len(h) > 0 && h[0] != "" && len(h[0]) <= 128 {
		if rv, ok := v.Snap.Reported(channel, h[0]); ok {
			return rv, true
		}
	}
	if r.URL.RawQuery == "" {
		return resolver.Version{}, false
	}
	current := r.URL.Query().Get("current")
	if len(current) > 128 {
		return resolver.Version{}, false
	}
	return v.Snap.Reported(channel, current)
}
