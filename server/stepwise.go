package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tidemark-dev/tidemark/internal/enroll"
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
func (s *Server) clusterAnswer(r *http.Request, who asker, v *core.View, e *core.Entry) (*core.Entry, error) {
	id := who.id
	ch := &e.Ans.Channel
	if id == "" && !ch.Stepwise && e.Ans.Rollout == nil && !reportsVersion(r) {
		// The plain hot path: nothing to read or record.
		if e.Ans.Tag == nil {
			return nil, noAnswer(v, e.Ans)
		}
		return e, nil
	}
	now := time.Now()
	reported, ok := reportedVersion(r, v, ch.Name)
	sighting := resolver.Sighting{Cluster: id, Channel: ch.Name, At: now, Enrolled: who.enrolled}
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
	ans, directed, err := s.answerFor(r.Context(), v, e, id, admitted, reported, ok, now)
	if sighting.Reported != "" && ans != nil {
		ans = withRunning(v, ans, reported) // its line's warning, if it ends
	}
	if admitted {
		if ans != nil {
			sighting.Served, sighting.Forced = ans.Version, ans.Forced
			if directed {
				sighting.Directed = ans.Version
			}
		}
		// With enrollment on, only an enrolled cluster's report counts.
		sighting.Outside = !s.FleetRec.Counts(addr) || (s.Opts.Enrollment.Mode() != enroll.Off && !who.enrolled)
		s.FleetRec.Record(sighting)
	}
	return ans, err
}

// answerFor turns the domain's decision for this cluster
// (Snapshot.ClusterAnswer) into the entry to send, and says whether the
// channel's rule chose it (directed) or it is a stay. The settle clock is
// this replica's fleet record of the cluster; one not admitted has none
// and is held.
func (s *Server) answerFor(ctx context.Context, v *core.View, e *core.Entry, id string, admitted bool, reported resolver.Version, ok bool, now time.Time) (*core.Entry, bool, error) {
	ch := &e.Ans.Channel
	if e.Ans.Tag == nil {
		return nil, false, noAnswer(v, e.Ans)
	}
	active, _ := s.FleetRec.ActiveServed(ch.Name)
	q := snapshot.Asker{ID: id, Reported: reported, HasReported: ok, Now: now, Active: active}
	if ok && snapshot.Settles(ch, id) {
		if q.Unsettled = !admitted; admitted {
			q.Since = s.FleetRec.Since(ctx, ch.Name, id, reported.String(), now)
		}
	}
	d, err := v.Snap.ClusterAnswer(ch.Name, q)
	if errors.Is(err, snapshot.ErrNoReportedVersion) {
		return nil, false, &core.ProblemAnswer{Err: fmt.Errorf("%w: channel %q is stepwise: it answers each cluster with its next step from the version it runs, "+
			"and this request reports none; add ?current=<version> to the channel URL (the Plan's spec.channel), "+
			"or use system-upgrade-controller, which sends X-SUC-Latest-Version after its first answer", resolver.ErrNotFound, ch.Name)}
	}
	if err != nil {
		return nil, false, err
	}
	if d.Forced != "" {
		s.forced.WithLabelValues(ch.Name).Inc()
		fe := *e.EntryFor(&d.Tag, s.Opts.ExternalURL)
		fe.Forced = d.Forced
		return &fe, true, nil
	}
	if d.Held != "" {
		s.Metrics.HeldAnswer(ch.Name, d.Held)
		he := *e.EntryFor(&d.Tag, s.Opts.ExternalURL)
		he.Held = d.Held
		return &he, false, nil
	}
	return e.EntryFor(&d.Tag, s.Opts.ExternalURL), d.Directed, nil
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
