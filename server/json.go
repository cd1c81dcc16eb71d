package server

import (
	"time"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
)

// Conversions from the snapshot to the wire types of package openapi; the
// spec tests validate real responses against openapi.yaml.

func channelJSON(e *channelEntry) openapi.Channel {
	return channelJSONWith(e, time.Now(), e.clusters())
}

// channelAt is e's channel object and its ETag at now, from one reading
// of the rollout counts, so the ETag always names the body sent with it.
func (e *channelEntry) channelAt(now time.Time) (openapi.Channel, string) {
	cc := e.clusters()
	return channelJSONWith(e, now, cc), e.etagWith(now, cc)
}

// channelJSONWith is e's channel object at now with the rollout counts cc.
func channelJSONWith(e *channelEntry, now time.Time, cc *openapi.RolloutClusters) openapi.Channel {
	a := e.ans
	j := openapi.Channel{
		Name:       a.Channel.Name,
		Source:     a.Channel.Source,
		Stream:     a.Channel.Stream.String(),
		Constraint: strOrNil(a.Channel.ConstraintText),
		Pinned:     a.Pinned,
		UpdatedAt:  openapi.TimeOrNil(a.State.UpdatedAt),
	}
	if a.Tag != nil {
		j.Version = strOrNil(e.version)
		j.Tag = strOrNil(a.Tag.Name)
		j.Digest = strOrNil(e.digest)
	}
	j.Rollout = channelRollout(a.Rollout, now, cc)
	switch h := a.State.Hold; {
	case e.held != "":
		j.Held = &openapi.Held{Reason: e.held}
	case h != nil:
		j.Held = &openapi.Held{Reason: h.Reason, Until: openapi.TimeOrNil(h.Until)}
	}
	return j
}

func versionJSON(v resolver.VersionView) openapi.Version {
	return openapi.Version{
		Tag:            v.Name,
		Version:        v.Version.String(),
		Major:          v.Version.Major,
		Minor:          v.Version.Minor,
		Patch:          v.Version.Patch,
		Pre:            v.Version.Pre,
		PreNumber:      v.Version.PreNumber,
		Build:          v.Version.Build,
		Stream:         v.Stream.String(),
		Digest:         strOrNil(v.Digest),
		Blocked:        v.Blocked,
		Servable:       v.Servable,
		Gates:          gatesJSON(v.Gates),
		PreviousDigest: strOrNil(v.PreviousDigest),
	}
}

func gatesJSON(g *resolver.GateState) *openapi.Gates {
	if g == nil {
		return nil
	}
	return &openapi.Gates{Platforms: g.Platforms, Signature: g.Signature, Soak: g.Soak}
}

func sourceJSON(sv resolver.SourceView) openapi.Source {
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

func scanJSON(s *resolver.Scan) *openapi.Scan {
	if s == nil {
		return nil
	}
	return &openapi.Scan{
		Started:  s.Started.UTC(),
		Finished: openapi.TimeOrNil(s.Finished),
		Outcome:  s.Outcome,
		Error:    strOrNil(s.Error),
		Complete: s.Complete,
		TagsSeen: s.TagsSeen,
		TagsNew:  s.TagsNew,
		TagsGone: s.TagsGone,
	}
}

func resolveJSON(a resolver.Answer, base string) openapi.ResolveAnswer {
	j := openapi.ResolveAnswer{
		Source:    a.Source,
		Current:   a.Current.String(),
		Stream:    a.Stream.String(),
		Channel:   strOrNil(a.Channel),
		Available: canonicals(a.Available),
		Path:      canonicals(a.Path),
		Reason:    a.Reason,
		Risks:     make([]openapi.ResolveRisk, len(a.Risks)),
	}
	for i, h := range a.Risks {
		j.Risks[i] = openapi.ResolveRisk{To: h.To.Version.String(), Name: h.Risk.Name, Message: h.Risk.Message, URL: riskURL(h.Risk, base), Accepted: h.Accepted}
	}
	if a.Target != nil {
		j.Target = strOrNil(a.Target.Version.String())
		j.TargetTag = strOrNil(a.Target.Name)
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

func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
