package catalog

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/tidemark-dev/tidemark/resolver"
)

// Channel is a channel as declared in configuration. It is built by the config
// loader and never changes while the process runs.
type Channel struct {
	Name       string
	Source     string
	Stream     resolver.Stream
	Constraint *semver.Constraints // nil: no constraint
	// ConstraintText is the constraint as written, for display.
	ConstraintText string
	Include        *regexp.Regexp // latestRegexp / include; nil: everything
	Exclude        *regexp.Regexp // excludeRegexp / exclude; nil: nothing
	Latest         string         // fixed version from config (channelserver "latest"); acts as a pin
	Builds         bool           // juju: serve versions with build numbers
	Redirect       string         // Location prefix; "" means the default (see server)
	// Stepwise answers each cluster with its next step toward the
	// channel's version, from the version it reports (stepwise.go).
	Stepwise bool
	// Settle is how long a cluster must have reported a version before a
	// stepwise channel moves it on; 0: at once.
	Settle time.Duration
	// Soak is the channel's own soak gate in place of its source's
	// (stricter or looser); nil: the source's.
	Soak *time.Duration
	// Rollout stages each change of the channel's version (rollout.go);
	// nil: every cluster gets a new version at once.
	Rollout *resolver.RolloutPolicy
	// Approvals is how many identities other than the requester must
	// approve a pin, unpin or scheduled change (0: none), within
	// ApprovalTTL (governance.go).
	Approvals   int
	ApprovalTTL time.Duration
	// Windows are when the channel's answer may move; none: always.
	Windows []resolver.Window
	// Promote moves the channel itself to what From answers, once the
	// fleet's evidence says so (promote:); nil: never.
	Promote *PromotePolicy
	// Yank halts and holds a version the channel serves whose clusters
	// get stuck (yank:); nil: never.
	Yank *YankPolicy
	// UpgradeExpired directs a cluster on an expired line to the next
	// line, one minor at a time (lifecycle: {upgrade_expired: true}).
	UpgradeExpired bool
}

// YankPolicy is yank: {max_stuck_ratio, min_told}.
type YankPolicy struct {
	MaxStuckRatio float64
	MinTold       int
}

// PromotePolicy is promote: {from, soak, min_adopted, max_stuck_ratio}.
type PromotePolicy struct {
	From          string
	Soak          time.Duration
	MinAdopted    int
	MaxStuckRatio float64
}

// ChannelState is the mutable part of a channel, kept in the database.
type ChannelState struct {
	Pin       string // canonical version pinned by a release engineer; "" when following the stream
	PinDigest string // digest captured at promotion time
	PinnedBy  string
	PinnedAt  time.Time
	Revision  int64 // bumps on every change; the ETag derives from it
	UpdatedAt time.Time
	// Rollback: the pin was made as a rollback, so clusters running a
	// newer version are sent down to it (CONTRACT section 13).
	Rollback bool
	// Rollout is the channel's latest rollout; nil when it has none.
	Rollout *resolver.Rollout
	// Hold keeps the channel's answer where it was (a window closed, a
	// freeze); nil: none.
	Hold *resolver.Hold
}

// Filter is the part of eligibility a channel and a resolve query share.
// A nil channel means "no channel": only stream, blocks and builds apply.
type Filter struct {
	Channel *Channel
	Stream  resolver.Stream
	// Builds lets juju build-numbered versions through. Semver build numbers
	// are release revisions and always pass.
	Builds bool
	cons   *Constraint // ch.Constraint compiled; nil: none
	// soak is the channel's own soak (Channel.Soak); nil: the source's
	// gates decide alone (VersionView.Servable). now is when the snapshot
	// was built, the moment soaks are measured at.
	soak *time.Duration
	now  time.Time
}

// ChannelFilter compiles c's constraint (memoized by text). The snapshot
// keeps one per channel; this is for callers holding only a Channel.
func ChannelFilter(c *Channel, now time.Time) Filter {
	return Filter{Channel: c, Stream: c.Stream, Builds: c.Builds, cons: channelConstraint(c), soak: c.Soak, now: now}
}

// OK is the hot path of channel evaluation: cheapest checks first, the
// regexps last, and no allocation.
func (f Filter) OK(v *resolver.VersionView) bool {
	return f.base(v) && (f.cons == nil || f.cons.Check(&v.Version)) && f.regexps(v)
}

// base is everything but the constraint and regexps.
func (f Filter) base(v *resolver.VersionView) bool {
	if !v.Valid || v.Blocked || !f.Servable(v) || !f.Stream.Includes(v.Stream) {
		return false
	}
	return f.Builds || v.Version.Build == 0 || v.Version.Scheme() != resolver.SchemeJuju
}

// regexps go last: a compiled constraint costs nanoseconds, a regexp a
// hundred.
func (f Filter) regexps(v *resolver.VersionView) bool {
	c := f.Channel
	if c == nil || c.Include == nil && c.Exclude == nil {
		return true
	}
	canon := v.Version.String()
	if c.Include != nil && !matches(c.Include, canon) {
		return false
	}
	return c.Exclude == nil || !matches(c.Exclude, canon)
}

// matches is re.MatchString with a cheap rejection first: every match of a
// regexp contains its literal prefix, so a string without it cannot match.
// Channel regexps like `v1\.33\..*` reject most versions this way, at a
// tenth of the cost of running the regexp.
func matches(re *regexp.Regexp, s string) bool {
	if p, _ := re.LiteralPrefix(); p != "" && !strings.Contains(s, p) {
		return false
	}
	return re.MatchString(s)
}

// WhyNot explains, for a person, why ok rejects v; "" when it does not. It
// mirrors ok check for check so the two cannot disagree silently (a test
// asserts they agree).
func (f Filter) WhyNot(v *resolver.VersionView) string {
	switch {
	case !v.Valid:
		return fmt.Sprintf("tag %q is not a version", v.Name)
	case v.Blocked:
		return fmt.Sprintf("%s is blocked", v.Version)
	case !f.Servable(v):
		return fmt.Sprintf("%s is held by release gates (%s)", v.Version, f.Gates(v).Reason())
	case !f.Stream.Includes(v.Stream):
		return fmt.Sprintf("%s is a %s version, not served on the %s stream", v.Version, v.Stream, f.Stream)
	case !f.Builds && v.Version.Scheme() == resolver.SchemeJuju && v.Version.Build > 0:
		return fmt.Sprintf("%s is a development build (build %d); ask for builds or run a build-numbered version", v.Version, v.Version.Build)
	}
	if f.cons != nil && !f.cons.Check(&v.Version) {
		// Only channelFilter sets cons, so ch is set.
		return fmt.Sprintf("%s does not satisfy channel %q constraint %q", v.Version, f.Channel.Name, f.Channel.ConstraintText)
	}
	c := f.Channel
	if c == nil {
		return ""
	}
	canon := v.Version.String()
	switch {
	case c.Include != nil && !c.Include.MatchString(canon):
		return fmt.Sprintf("%s does not match channel %q include /%s/", canon, c.Name, c.Include)
	case c.Exclude != nil && c.Exclude.MatchString(canon):
		return fmt.Sprintf("%s matches channel %q exclude /%s/", canon, c.Name, c.Exclude)
	}
	return ""
}

// ConstraintVersion is v as M.m.p[-pre] for Masterminds constraints. The build
// is dropped on purpose: a constraint speaks about releases, and juju's
// four-part versions are not semver. Juju's Prerelease ("beta1") is already a
// valid semver pre-release.
func ConstraintVersion(v resolver.Version) *semver.Version {
	return semver.New(uint64(max(v.Major, 0)), uint64(max(v.Minor, 0)), uint64(max(v.Patch, 0)), v.Prerelease(), "")
}

// Pick returns the index of the highest version in versions (ascending, as
// Snapshot.Versions returns them) that channel c serves, or -1. It ignores
// pins and Latest: those fix an answer rather than select one (see
// Snapshot.Channel). It is the uncached evaluation the snapshot runs once per
// channel.
func Pick(c *Channel, versions []resolver.VersionView) int {
	return ChannelFilter(c, time.Now()).Pick(versions, nil)
}

// Pick scans from the top: the answer is usually among the newest versions,
// so the common case touches a handful of entries. keys (the index's, or nil)
// let the constraint answer once per run of builds.
func (f Filter) Pick(versions []resolver.VersionView, keys []ConstraintKey) int {
	if keys == nil || f.cons == nil {
		for i := len(versions) - 1; i >= 0; i-- {
			if f.OK(&versions[i]) {
				return i
			}
		}
		return -1
	}
	// The constraint skips what it rejects by run (keys); the rest of the
	// filter runs on what it accepts.
	return f.cons.Scan(versions, keys, len(versions), func(i int) bool {
		v := &versions[i]
		return f.base(v) && f.regexps(v)
	})
}

// Servable is the one rule for "not Servable", beside blocked: the source's
// gates as evaluated when the snapshot was built, or, for a channel with its
// own soak, the registry gates with the channel's soak. No allocation: it
// runs for every version a channel looks at.
func (f Filter) Servable(v *resolver.VersionView) bool {
	if f.soak == nil {
		return v.Servable
	}
	return !v.RegistryHeld && (*f.soak <= 0 || !f.now.Before(v.FirstSeen.Add(*f.soak)))
}

// Gates is v's gate state as f sees it: the source's, with the channel's
// own soak in place of the source's. nil when no gate applies.
func (f Filter) Gates(v *resolver.VersionView) *resolver.GateState {
	if f.soak == nil {
		return v.Gates
	}
	var st resolver.GateState
	if v.Gates != nil {
		st = *v.Gates
	}
	st.Soak = ""
	if *f.soak > 0 {
		st.Soak = resolver.SoakState(v.FirstSeen.Time(), *f.soak, f.now)
	}
	if st == (resolver.GateState{}) {
		return nil
	}
	return &st
}
