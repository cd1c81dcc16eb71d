package server

import (
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
)

// The JSON shapes of the API. openapi/openapi.yaml describes each one; the
// drift tests validate real responses against it.

// ChannelJSON is the channel object of /api/v1/channels and of a channel URL
// asked with Accept: application/json. Version, Tag and Digest are null when
// nothing is eligible; Constraint is null when the channel has none.
type ChannelJSON struct {
	Name       string     `json:"name"`
	Source     string     `json:"source"`
	Stream     string     `json:"stream"`
	Constraint *string    `json:"constraint"`
	Pinned     bool       `json:"pinned"`
	Version    *string    `json:"version"`
	Tag        *string    `json:"tag"`
	Digest     *string    `json:"digest"`
	UpdatedAt  *time.Time `json:"updated_at"`
}

func channelJSON(e *channelEntry) ChannelJSON {
	a := e.ans
	j := ChannelJSON{
		Name:       a.Channel.Name,
		Source:     a.Channel.Source,
		Stream:     a.Channel.Stream.String(),
		Constraint: strOrNil(a.Channel.ConstraintText),
		Pinned:     a.Pinned,
		UpdatedAt:  timeOrNil(a.State.UpdatedAt),
	}
	if a.Tag != nil {
		j.Version = strOrNil(e.version)
		j.Tag = strOrNil(a.Tag.Name)
		j.Digest = strOrNil(e.digest)
	}
	return j
}

// releaseCollection is channelserver's (rancher/apiserver) collection.
type releaseCollection struct {
	Type         string            `json:"type"`
	Links        map[string]string `json:"links"`
	Actions      struct{}          `json:"actions"`
	ResourceType string            `json:"resourceType"`
	Data         []releaseChannel  `json:"data"`
}

// releaseChannel is one channelserver channel. Latest is the resolved
// version (omitted when nothing is eligible, as channelserver does).
type releaseChannel struct {
	ID            string            `json:"id"`
	Type          string            `json:"type"`
	Links         map[string]string `json:"links"`
	Name          string            `json:"name"`
	Latest        string            `json:"latest,omitempty"`
	LatestRegexp  string            `json:"latestRegexp,omitempty"`
	ExcludeRegexp string            `json:"excludeRegexp,omitempty"`
}

// VersionJSON is one indexed version of a source.
type VersionJSON struct {
	Tag       string  `json:"tag"`
	Version   string  `json:"version"`
	Major     int     `json:"major"`
	Minor     int     `json:"minor"`
	Patch     int     `json:"patch"`
	Pre       string  `json:"pre"`
	PreNumber int     `json:"pre_number"`
	Build     int     `json:"build"`
	Stream    string  `json:"stream"`
	Digest    *string `json:"digest"`
	Blocked   bool    `json:"blocked"`
	// PreviousDigest is set when the tag was re-pointed to another image.
	PreviousDigest *string `json:"previous_digest,omitempty"`
}

func versionJSON(v resolver.VersionView) VersionJSON {
	return VersionJSON{
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
		PreviousDigest: strOrNil(v.PreviousDigest),
	}
}

// SourceJSON is a source's indexing status.
type SourceJSON struct {
	Name        string         `json:"name"`
	Image       string         `json:"image"`
	Scheme      string         `json:"scheme"`
	LastScan    *ScanJSON      `json:"last_scan"`
	LastSuccess *ScanJSON      `json:"last_success"`
	Tags        int            `json:"tags"`
	Unparsed    int            `json:"unparsed"`
	Versions    map[string]int `json:"versions"` // per stream, all four present
}

// ScanJSON is one indexing run.
type ScanJSON struct {
	Started  time.Time  `json:"started"`
	Finished *time.Time `json:"finished"`
	Outcome  string     `json:"outcome"`
	Error    *string    `json:"error"`
	Complete bool       `json:"complete"`
	TagsSeen int        `json:"tags_seen"`
	TagsNew  int        `json:"tags_new"`
	TagsGone int        `json:"tags_gone"`
}

func sourceJSON(sv resolver.SourceView) SourceJSON {
	j := SourceJSON{
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

func scanJSON(s *resolver.Scan) *ScanJSON {
	if s == nil {
		return nil
	}
	return &ScanJSON{
		Started:  s.Started.UTC(),
		Finished: timeOrNil(s.Finished),
		Outcome:  s.Outcome,
		Error:    strOrNil(s.Error),
		Complete: s.Complete,
		TagsSeen: s.TagsSeen,
		TagsNew:  s.TagsNew,
		TagsGone: s.TagsGone,
	}
}

// ResolveJSON is the dry-run upgrade answer. Versions are canonical strings
// throughout, which is what an upgrade client compares and prints;
// TargetTag is the registry tag to pull for Target.
type ResolveJSON struct {
	Source    string   `json:"source"`
	Current   string   `json:"current"`
	Stream    string   `json:"stream"`
	Channel   *string  `json:"channel"`
	Available []string `json:"available"`
	Target    *string  `json:"target"`
	TargetTag *string  `json:"target_tag"`
	Path      []string `json:"path"`
	Reason    string   `json:"reason"`
}

func resolveJSON(a resolver.Answer) ResolveJSON {
	j := ResolveJSON{
		Source:    a.Source,
		Current:   a.Current.String(),
		Stream:    a.Stream.String(),
		Channel:   strOrNil(a.Channel),
		Available: canonicals(a.Available),
		Path:      canonicals(a.Path),
		Reason:    a.Reason,
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

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
