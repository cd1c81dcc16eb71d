package snapshot

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// Query is a dry-run upgrade question: "I run Current of Source; on Stream (or
// following Channel), what may I upgrade to, and by what path?"
type Query struct {
	Source  string
	Current string           // a version or tag of Source
	Stream  *resolver.Stream // nil: the channel's stream, or Released
	Channel string           // "": none; else the channel's stream, constraint and filters apply
	Target  string           // "": pick; else that exact version is asked for
	Builds  bool             // allow juju build-numbered versions even if Current has none
	// Cluster is the asking cluster's ID: risks limited to some clusters
	// apply when it matches them. AcceptRisks names risks the asker takes:
	// their edges are offered as if no risk covered them.
	Cluster     string
	AcceptRisks []string
}

// RiskHit is a known risk on the edge from the current version to a
// candidate (Answer.Risks).
type RiskHit struct {
	To       resolver.Tag
	Risk     *catalog.Risk
	Accepted bool
}

// Answer is the dry-run answer. Available is ascending; Target is the next
// step (nil when nothing newer); Path starts at Target, then the newest
// version of each following minor up to the newest candidate.
type Answer struct {
	Source    string
	Current   resolver.Version
	Stream    resolver.Stream
	Channel   string
	Available []resolver.Tag
	Target    *resolver.Tag
	Path      []resolver.Tag
	Reason    string
	// Risks are the known risks on edges from Current to Available, by
	// candidate then name; Target and Path avoid those not accepted.
	Risks []RiskHit
}

// noUpgrades is the contract's reason when nothing newer exists at all.
const noUpgrades = "no upgrades available"

// Resolve answers q over the snapshot. Errors: ErrNotFound (unknown source,
// channel, or target version), ErrInvalid (unparseable input),
// ErrUnprocessable (a target that is a downgrade, a skip of a minor, another
// major, blocked or ineligible; the error text is the reason).
//
// The policy is kubeone's and juju's: never a surprise. Candidates stay in
// the current major (juju refuses implicit major upgrades: a new major is a
// migration), the target moves at most one minor (kubeadm's skew policy), and
// a channel pin caps what a channel's followers are offered.
func (s *Snapshot) Resolve(q Query) (Answer, error) {
	var chAns *ChannelAnswer
	chFilter := catalog.Filter{Stream: resolver.Released}
	if q.Channel != "" {
		i, ok := s.byChannel[q.Channel]
		if !ok {
			return Answer{}, fmt.Errorf("%w: channel %q", resolver.ErrNotFound, q.Channel)
		}
		chAns, chFilter = &s.answers[i], s.filters[i]
		switch {
		case q.Source == "":
			q.Source = chAns.Channel.Source
		case q.Source != chAns.Channel.Source:
			return Answer{}, fmt.Errorf("%w: channel %q follows source %q, not %q", resolver.ErrInvalid, q.Channel, chAns.Channel.Source, q.Source)
		}
	}
	idx, err := s.source(q.Source)
	if err != nil {
		return Answer{}, err
	}
	cur, err := idx.current(q.Current)
	if err != nil {
		return Answer{}, err
	}
	// An explicit stream wins over the channel's; the channel's other
	// filters still apply.
	r := resolution{cur: cur, idx: idx, ch: chAns, f: chFilter}
	if q.Stream != nil {
		r.f.Stream = *q.Stream
	}
	// A client already on a development build keeps receiving builds:
	// refusing them would strand it (juju's JUJU_BUILD_NUMBER workflow).
	r.f.Builds = r.f.Builds || q.Builds || cur.Build > 0
	r.collect()

	a := Answer{Source: q.Source, Current: cur, Stream: r.f.Stream, Channel: q.Channel}
	for _, v := range r.cands {
		a.Available = append(a.Available, v.Tag)
	}
	if len(idx.risks) > 0 {
		r.risky = func(from, to resolver.Version) bool {
			for _, rk := range idx.risksOn(from, to, q.Cluster) {
				if !slices.Contains(q.AcceptRisks, rk.Name) {
					return true
				}
			}
			return false
		}
		for _, v := range r.cands {
			for _, rk := range idx.risksOn(cur, v.Version, q.Cluster) {
				a.Risks = append(a.Risks, RiskHit{To: v.Tag, Risk: rk, Accepted: slices.Contains(q.AcceptRisks, rk.Name)})
			}
		}
	}
	if q.Target != "" {
		t, err := r.explicit(q.Target)
		if err != nil {
			return Answer{}, err
		}
		if r.risky != nil && r.risky(cur, t.Version) {
			rk := idx.risksOn(cur, t.Version, q.Cluster)[0]
			return Answer{}, fmt.Errorf("%w: target %s is risky from %s: risk %q: %s (accept it with accept_risks=%s)", resolver.ErrUnprocessable, t.Version, cur, rk.Name, rk.Message, rk.Name)
		}
		a.Target = &t.Tag
		a.Path = r.path(t)
		a.Reason = fmt.Sprintf("%s was asked for: a %s version of %s", t.Version, t.Stream, minorOf(t.Version))
		return a, nil
	}
	target := r.step()
	if target != nil {
		a.Target = &target.Tag
	}
	a.Path = r.path(target)
	a.Reason = r.reason(a.Target, a.Path)
	var held []string
	for _, h := range a.Risks {
		if !h.Accepted && !slices.Contains(held, h.Risk.Name) {
			held = append(held, h.Risk.Name)
		}
	}
	if len(held) > 0 {
		a.Reason += fmt.Sprintf("; versions on an edge a known risk covers are not offered (%s; accept_risks= takes them)", strings.Join(held, ", "))
	}
	return a, nil
}

// current finds the client's version: indexed (canonical or tag), or parsed
// with the source's parser, because a client may run a version that was
// never pushed here or has since been deleted.
func (idx *sourceIndex) current(s string) (resolver.Version, error) {
	if s == "" {
		return resolver.Version{}, fmt.Errorf("%w: current version is required", resolver.ErrInvalid)
	}
	// A raw tag, or a canonical string that does not parse back to itself,
	// names its indexed version; anything else means what it parses to,
	// which for a canonical string is exactly the indexed version (lookup
	// would parse it, search, and hand back the same value). One map probe
	// and at most one parse: a stepwise answer runs this per request.
	if i, ok := idx.oddCanon[s]; ok {
		return idx.versions[i].Version, nil
	}
	if vv, ok := idx.byName(s); ok {
		return vv.Version, nil
	}
	p := idx.view.Source.Parser
	if p == nil {
		return resolver.Version{}, fmt.Errorf("%w: current version %q: source %q has no parser", resolver.ErrInvalid, s, idx.view.Source.Name)
	}
	v, err := p.Parse(s)
	if err != nil {
		return resolver.Version{}, fmt.Errorf("current version of source %q: %w", idx.view.Source.Name, err)
	}
	return v, nil
}

// resolution is the working state of one Resolve call.
type resolution struct {
	cur resolver.Version
	idx *sourceIndex
	ch  *ChannelAnswer // nil without a channel
	f   catalog.Filter
	// cands are the eligible versions newer than cur in its major, ascending.
	cands []*resolver.VersionView
	// otherMajor is the oldest eligible version of a newer major: not
	// offered, but named in the reason so nobody wonders where it went.
	otherMajor *resolver.VersionView
	// abovePin is set when an eligible version exists above the channel pin.
	abovePin bool
	// risky reports an edge a known risk covers for the asker and the
	// asker did not accept; nil: no risks.
	risky func(from, to resolver.Version) bool
	// minors are the minors of the current major above the current one that
	// have any version at all (any stream, blocked or filtered out),
	// ascending. A minor that never shipped is not one a client could pass
	// through, so stepping over it is not a skip; stepping over one that
	// exists is, even when none of its versions is eligible (Kubernetes
	// refuses it; a release-candidate-only minor still gets its release).
	minors []int
}

// step is the next step from r.cur, the one rule of every upgrade answer:
// the newest candidate of the next existing minor, or when that minor has
// none (or there is none), the newest of the current minor; nil when
// nothing is newer. Stepwise channels answer with it too (stepwise.go).
func (r *resolution) step() *resolver.VersionView {
	if next := r.nextMinor(r.cur.Minor); next >= 0 {
		if t := r.newestFrom(next, r.cur); t != nil {
			return t
		}
	}
	return r.newestFrom(r.cur.Minor, r.cur)
}

// newestFrom is newestIn that skips versions on a risky edge from from.
func (r *resolution) newestFrom(m int, from resolver.Version) *resolver.VersionView {
	if r.risky == nil {
		return r.newestIn(m)
	}
	for i := len(r.cands) - 1; i >= 0; i-- {
		switch v := r.cands[i]; {
		case v.Version.Minor == m && !r.risky(from, v.Version):
			return v
		case v.Version.Minor < m:
			return nil
		}
	}
	return nil
}

// above narrows r, collected from an older current version of the same
// major with the same filter, to what collect would find from cur: the
// candidates newer than cur and the existing minors above cur's. Every
// version of a higher minor is newer than cur, so nothing is missed.
func (r resolution) above(cur resolver.Version) resolution {
	k := sort.Search(len(r.cands), func(i int) bool { return resolver.Compare(r.cands[i].Version, cur) > 0 })
	r.cands = r.cands[k:]
	r.minors = r.minors[sort.SearchInts(r.minors, cur.Minor+1):]
	r.cur = cur
	return r
}

// nextMinor is the first existing minor above m, or -1.
func (r *resolution) nextMinor(m int) int {
	for _, n := range r.minors {
		if n > m {
			return n
		}
	}
	return -1
}

// pinned is the version a pinned channel serves; ok reports whether the
// channel is pinned at all (a pinned channel with nothing served offers
// nothing).
func (r *resolution) pinned() (pin *resolver.Tag, ok bool) {
	if r.ch == nil || !r.ch.Pinned {
		return nil, false
	}
	return r.ch.Tag, true
}

func (r *resolution) collect() {
	vs := r.idx.versions
	// versions are ascending: skip straight past everything not newer.
	lo, hi := 0, len(vs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if resolver.Compare(vs[m].Version, r.cur) <= 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	pin, pinned := r.pinned()
	for i := lo; i < len(vs); i++ {
		v := &vs[i]
		isPin := pin != nil && v.Version.String() == pin.Version.String()
		// The pin is a deliberate promotion: it is offered even when the
		// channel's filters would not select it (a forced pin), as the
		// channel itself serves it.
		if v.Valid && v.Version.Major == r.cur.Major && v.Version.Minor > r.cur.Minor &&
			(len(r.minors) == 0 || r.minors[len(r.minors)-1] != v.Version.Minor) {
			r.minors = append(r.minors, v.Version.Minor)
		}
		if !isPin && !r.f.OK(v) {
			continue
		}
		switch {
		case v.Version.Major != r.cur.Major:
			if r.otherMajor == nil && v.Version.Major > r.cur.Major {
				r.otherMajor = v
			}
		case pinned && (pin == nil || resolver.Compare(v.Version, pin.Version) > 0):
			r.abovePin = true
		default:
			r.cands = append(r.cands, v)
		}
	}
}

// newestIn is the newest candidate of minor m of the current major.
func (r *resolution) newestIn(m int) *resolver.VersionView {
	for i := len(r.cands) - 1; i >= 0; i-- {
		switch v := r.cands[i]; {
		case v.Version.Minor == m:
			return v
		case v.Version.Minor < m:
			return nil
		}
	}
	return nil
}

// path is the hops a client takes from target: target itself, then the
// newest candidate of each following existing minor up to the newest
// candidate (juju's upgrade-controller: 2.7.5 -> 2.8.11 -> 2.9.46). It stops
// at an existing minor with no candidate: a path may not skip a minor.
// Current is not on it, nor a newer patch of its minor when the target is
// already in the next one.
func (r *resolution) path(target *resolver.VersionView) []resolver.Tag {
	if target == nil {
		return nil
	}
	p := []resolver.Tag{target.Tag}
	if len(r.cands) == 0 {
		return p
	}
	newest := r.cands[len(r.cands)-1].Version.Minor
	from := target.Version
	for m := r.nextMinor(target.Version.Minor); m >= 0 && m <= newest; m = r.nextMinor(m) {
		v := r.newestFrom(m, from)
		if v == nil {
			break
		}
		p = append(p, v.Tag)
		from = v.Version
	}
	return p
}

// explicit checks an asked-for target; the error is the reason it is refused.
func (r *resolution) explicit(target string) (*resolver.VersionView, error) {
	t, ok := r.idx.lookup(target)
	if !ok {
		return nil, fmt.Errorf("%w: target version %q of source %q", resolver.ErrNotFound, target, r.idx.view.Source.Name)
	}
	tv, cur := t.Version, r.cur
	pin, pinned := r.pinned()
	isPin := pin != nil && tv.String() == pin.Version.String()
	switch {
	case resolver.Compare(tv, cur) <= 0:
		return nil, fmt.Errorf("%w: downgrade refused: target %s is not newer than current %s", resolver.ErrUnprocessable, tv, cur)
	case tv.Major != cur.Major:
		return nil, fmt.Errorf("%w: target %s is another major than current %s: upgrades never cross a major (a new major is a migration)", resolver.ErrUnprocessable, tv, cur)
	case t.Blocked:
		return nil, fmt.Errorf("%w: target %s is blocked%s", resolver.ErrUnprocessable, tv, suffix(": ", t.BlockReason()))
	case pinned && pin == nil:
		return nil, fmt.Errorf("%w: target %s: channel %q is pinned to a version it cannot serve (%s)", resolver.ErrUnprocessable, tv, r.ch.Channel.Name, r.ch.Why)
	case pinned && resolver.Compare(tv, pin.Version) > 0:
		return nil, fmt.Errorf("%w: target %s is above %s, the version channel %q is pinned to", resolver.ErrUnprocessable, tv, pin.Version, r.ch.Channel.Name)
	}
	if !isPin {
		if why := r.f.WhyNot(t); why != "" {
			return nil, fmt.Errorf("%w: target %s is not eligible: %s", resolver.ErrUnprocessable, tv, why)
		}
	}
	if nm := r.nextMinor(cur.Minor); nm >= 0 && tv.Minor > nm {
		next := fmt.Sprintf("%d.%d", cur.Major, nm)
		if n := r.newestIn(nm); n != nil {
			return nil, fmt.Errorf("%w: target %s would skip minor %s; upgrade to %s first", resolver.ErrUnprocessable, tv, next, n.Version)
		}
		return nil, fmt.Errorf("%w: target %s would skip minor %s, which has no eligible %s version yet", resolver.ErrUnprocessable, tv, next, r.f.Stream)
	}
	return t, nil
}

// reason says in one sentence why the answer is what it is.
func (r *resolution) reason(target *resolver.Tag, path []resolver.Tag) string {
	var notes []string
	inChannel := ""
	if r.ch != nil {
		inChannel = fmt.Sprintf(" in channel %q", r.ch.Channel.Name)
	}
	if target != nil {
		tv := target.Version
		s := fmt.Sprintf("%s is the newest %s version of %s%s", tv, r.f.Stream, minorOf(tv), inChannel)
		if tv.Minor > r.cur.Minor {
			s += ", the next minor"
		}
		notes = append(notes, s)
		if last := path[len(path)-1].Version; last.String() != tv.String() {
			notes = append(notes, fmt.Sprintf("then one minor at a time up to %s", last))
		}
	}
	if n := len(r.cands); n > 0 {
		if newest := r.cands[n-1].Version; len(path) == 0 || path[len(path)-1].Version.String() != newest.String() {
			notes = append(notes, fmt.Sprintf("%s is not offered because minor %d.%d has no eligible version to pass through", minorOf(newest), r.cur.Major, r.missingMinor(path)))
		}
	}
	if r.abovePin {
		notes = append(notes, fmt.Sprintf("newer versions are held back by channel %q's pin", r.ch.Channel.Name))
	}
	if r.otherMajor != nil {
		notes = append(notes, fmt.Sprintf("%s is not offered because it is another major", minorOf(r.otherMajor.Version)))
	}
	if target == nil {
		if len(notes) == 0 {
			return noUpgrades
		}
		return noUpgrades + ": " + strings.Join(notes, "; ")
	}
	return strings.Join(notes, "; ")
}

// missingMinor is the first existing minor the path could not reach.
func (r *resolution) missingMinor(path []resolver.Tag) int {
	last := r.cur.Minor
	if len(path) > 0 {
		last = path[len(path)-1].Version.Minor
	}
	return r.nextMinor(last)
}

func minorOf(v resolver.Version) string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

func suffix(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}
