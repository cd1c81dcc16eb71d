package core

import (
	"github.com/tidemark-dev/tidemark/server/graphcache"
	"time"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/evidence"
	"github.com/tidemark-dev/tidemark/resolver/signed"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// Conversions from the snapshot to the wire types of package openapi; the
// spec tests validate real responses against openapi.yaml.

func ChannelJSON(e *Entry) openapi.Channel {
	return channelJSONWith(e, time.Now(), e.clusters())
}

// ChannelAt is e's channel object and its ETag at now, from one reading
// of the rollout counts, so the ETag always names the body sent with it.
func (e *Entry) ChannelAt(now time.Time) (openapi.Channel, string) {
	cc := e.clusters()
	return channelJSONWith(e, now, cc), e.etagWith(now, cc)
}

// channelJSONWith is e's channel object at now with the rollout counts cc.
func channelJSONWith(e *Entry, now time.Time, cc *openapi.RolloutClusters) openapi.Channel {
	a := e.Ans
	j := openapi.Channel{
		Name:       a.Channel.Name,
		Source:     a.Channel.Source,
		Stream:     a.Channel.Stream.String(),
		Constraint: StrOrNil(a.Channel.ConstraintText),
		Pinned:     a.Pinned,
		UpdatedAt:  openapi.TimeOrNil(a.State.UpdatedAt),
	}
	if a.Tag != nil {
		j.Version = StrOrNil(e.Version)
		j.Tag = StrOrNil(a.Tag.Name)
		j.Digest = StrOrNil(e.digest)
	}
	j.Rollout = channelRollout(a.Rollout, now, cc)
	if p := a.Channel.Rollout; p != nil {
		j.RollsOut = &openapi.RolloutPolicy{Steps: p.Steps, IntervalSeconds: int64(p.Interval / time.Second)}
	}
	if p := a.Channel.Promote; p != nil {
		j.Promotion = &openapi.ChannelPromotion{From: p.From, Paused: evidence.Paused(a.State.Pin, a.State.PinnedBy)}
	}
	if rev, ok := e.tufRevision(); ok {
		j.TUF = &openapi.ChannelTUF{Target: signed.Path(a.Channel.Name), Revision: rev}
	}
	switch h := a.State.Hold; {
	case e.Held == snapshot.HeldBlocked:
		j.Held = &openapi.Held{Reason: snapshot.HeldDowngrade, Blocked: true}
	case e.Held != "":
		j.Held = &openapi.Held{Reason: e.Held}
	case h != nil:
		j.Held = &openapi.Held{Reason: h.Reason, Until: openapi.TimeOrNil(h.Until)}
	}
	e.lifecycleJSON(&j)
	return j
}

func VersionJSON(v resolver.VersionView) openapi.Version {
	return openapi.Version{
		Tag:            v.Name,
		Version:        v.Version.String(),
		Major:          v.Version.Major,
		Minor:          v.Version.Minor,
		Patch:          v.Version.Patch,
		Pre:            v.Version.Pre(),
		PreNumber:      v.Version.PreNumber,
		Build:          v.Version.Build,
		Stream:         v.Stream.String(),
		Digest:         StrOrNil(v.Digest.String()),
		Blocked:        v.Blocked,
		Servable:       v.Servable && !v.Blocked,
		DevBuild:       v.Version.Build > 0 && v.Version.Scheme() == resolver.SchemeJuju,
		Gates:          gatesJSON(v.Gates),
		PreviousDigest: StrOrNil(v.PreviousDigest()),
	}
}

func gatesJSON(g *resolver.GateState) *openapi.Gates {
	if g == nil {
		return nil
	}
	return &openapi.Gates{Platforms: g.Platforms, Signature: g.Signature, Soak: g.Soak}
}

func SourceJSON(sv snapshot.SourceView) openapi.Source {
	j := openapi.Source{
		Name:        sv.Source.Name,
		Image:       sv.Source.Image,
		LastScan:    scanJSON(sv.LastScan),
		LastSuccess: scanJSON(sv.LastOK),
		Tags:        sv.Tags,
		Unparsed:    sv.Unparsed,
		Versions:    make(map[string]int, 4),
	}
	if sv.Source.Parser != nil {
		j.Scheme = string(sv.Source.Parser.Scheme())
	}
	for st := resolver.Released; st <= resolver.Testing; st++ {
		j.Versions[st.String()] = sv.Streams[st]
	}
	return j
}

func scanJSON(s *catalog.Scan) *openapi.Scan {
	if s == nil {
		return nil
	}
	return &openapi.Scan{
		Started:  s.Started.UTC(),
		Finished: openapi.TimeOrNil(s.Finished),
		Outcome:  s.Outcome,
		Error:    StrOrNil(s.Error),
		Complete: s.Complete,
		TagsSeen: s.TagsSeen,
		TagsNew:  s.TagsNew,
		TagsGone: s.TagsGone,
	}
}

func resolveJSON(a snapshot.Answer, base string) openapi.ResolveAnswer {
	j := openapi.ResolveAnswer{
		Source:    a.Source,
		Current:   a.Current.String(),
		Stream:    a.Stream.String(),
		Channel:   StrOrNil(a.Channel),
		Available: canonicals(a.Available),
		Path:      canonicals(a.Path),
		Reason:    a.Reason,
		Risks:     make([]openapi.ResolveRisk, len(a.Risks)),
	}
	for i, h := range a.Risks {
		j.Risks[i] = openapi.ResolveRisk{To: h.To.Version.String(), Name: h.Risk.Name, Message: h.Risk.Message, URL: graphcache.RiskURL(h.Risk, base), Accepted: h.Accepted}
	}
	if a.Target != nil {
		j.Target = StrOrNil(a.Target.Version.String())
		j.TargetTag = StrOrNil(a.Target.Name)
	}
	return j
}

func canonicals(tags []resolver.Tag) []string {
	out := make([]string, len(tags))
	for i, t := range tags {
		out[i] = t.Version.String()
	}
	return out
}

func StrOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func ChangeJSON(c resolver.ScheduledChange) openapi.Change {
	j := openapi.Change{ID: c.ID, Channel: c.Channel, Action: c.Action, Version: StrOrNil(c.Version), Reason: c.Reason,
		At: openapi.TimeOrNil(c.At), State: c.State, RequestedBy: c.RequestedBy, CreatedAt: c.CreatedAt.UTC(),
		ApprovalsNeeded: c.ApprovalsNeeded, Approvals: []openapi.ChangeApproval{}, ExpiresAt: openapi.TimeOrNil(c.ExpiresAt),
		DecidedAt: openapi.TimeOrNil(c.DecidedAt), Outcome: c.Outcome}
	for _, a := range c.Approvals {
		j.Approvals = append(j.Approvals, openapi.ChangeApproval{Identity: a.Identity, Approve: a.Approve, At: a.At.UTC(), Reason: a.Reason})
	}
	return j
}

func FreezeJSON(f resolver.Freeze, now time.Time) openapi.Freeze {
	return openapi.Freeze{ID: f.ID, Channels: f.Channels, From: f.From.UTC(), Until: f.Until.UTC(), Reason: f.Reason,
		CreatedBy: f.CreatedBy, CreatedAt: f.CreatedAt.UTC(), Active: f.CancelledAt.IsZero() && !now.Before(f.From) && now.Before(f.Until)}
}

// RolloutJSON is r with its progress p and the fleet's counts (nil when
// none is known).
func RolloutJSON(r *resolver.Rollout, p resolver.Progress, clusters *openapi.RolloutClusters) *openapi.Rollout {
	var next *time.Time
	if !p.NextStepAt.IsZero() {
		t := p.NextStepAt.UTC()
		next = &t
	}
	return &openapi.Rollout{
		Channel: r.Channel, From: r.From, To: r.To, State: string(p.State),
		Percent: p.Percent, Step: p.Step + 1, Steps: r.Steps,
		StartedAt: r.StartedAt.UTC(), NextStepAt: next, Clusters: clusters,
	}
}

// channelRollout is the channel object's "rollout" at now, with the
// counts cc.
func channelRollout(rv *snapshot.RolloutView, now time.Time, cc *openapi.RolloutClusters) *openapi.Rollout {
	if rv == nil || rv.Baseline {
		return nil
	}
	return RolloutJSON(&rv.Rollout, rv.Progress(now), cc)
}

func countsJSON(cs []resolver.VersionCount) []openapi.VersionCount {
	out := make([]openapi.VersionCount, len(cs))
	for i, c := range cs {
		out[i] = openapi.VersionCount{Version: c.Version, Clusters: c.Clusters}
	}
	return out
}

func RiskJSON(r *catalog.Risk, base string) openapi.Risk {
	clusters := r.Clusters
	if clusters == nil {
		clusters = []string{}
	}
	return openapi.Risk{Source: r.Source, Name: r.Name, Message: r.Message, URL: graphcache.RiskURL(r, base),
		From: r.From, To: r.To, Clusters: clusters, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC()}
}
