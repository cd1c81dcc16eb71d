package resolver

// Labels maps a pre-release label to a stream. DefaultLabels is the contract's
// map; a source may override entries.
type Labels map[string]Stream

// DefaultLabels: "" -> released, rc -> proposed, beta -> devel; any label not
// in a map is testing.
var DefaultLabels = Labels{"": Released, "rc": Proposed, "beta": Devel}

// StreamOf returns the stream of v under the label map l (nil means DefaultLabels).
func (l Labels) StreamOf(v Version) Stream {
	if l == nil {
		l = DefaultLabels
	}
	pre := v.Pre()
	if pre == "" && v.Prerelease() != "" {
		// A pre-release with no label ("1.0.0-1", "1.0.0--x") is still a
		// pre-release; never let it pass for a release.
		return Testing
	}
	if s, ok := l[pre]; ok {
		return s
	}
	if pre == "" {
		return Released
	}
	return Testing
}

// Tag is one registry tag of a source as indexed: the raw tag, and, when it
// parses, its version and stream.
type Tag struct {
	Name      string  // the registry tag, e.g. "v1.33.6-k3s1"
	Valid     bool    // parsed under the source's scheme
	Present   bool    // still in the registry's latest complete listing
	Stream    Stream  // when Valid
	Version   Version // when Valid
	Digest    Digest  // "sha256:..."; zero until resolved
	FirstSeen Instant
	LastSeen  Instant
	// Gates is what the registry said about the tag's release gates, as
	// stored; nil when never checked. See GateChecks.For.
	Gates *GateChecks
	// rare holds the texts few tags have (ParseError, PreviousDigest,
	// BlockReason); nil for the rest. A snapshot holds a Tag per version:
	// three strings here cost 48 bytes a tag, the pointer 8.
	rare *rareTexts
}

type rareTexts struct {
	parseError     string
	previousDigest string
	blockReason    string
}

// InvalidTag is a tag that is no version under its source's scheme, with
// why (one line naming the tag).
func InvalidTag(name, why string) Tag {
	return Tag{Name: name, rare: &rareTexts{parseError: why}}
}

// ParseError says why the tag did not parse; "" when it did.
func (t Tag) ParseError() string {
	if t.rare == nil {
		return ""
	}
	return t.rare.parseError
}

// PreviousDigest is the digest before the last re-tag; "" if never
// re-tagged.
func (t Tag) PreviousDigest() string {
	if t.rare == nil {
		return ""
	}
	return t.rare.previousDigest
}

// SetPreviousDigest records the digest before the last re-tag.
func (t *Tag) SetPreviousDigest(d string) {
	if d != t.PreviousDigest() {
		t.editRare().previousDigest = d
	}
}

// editRare is t's rare texts to change: a copy, as Tags are values that
// share them.
func (t *Tag) editRare() *rareTexts {
	r := &rareTexts{}
	if t.rare != nil {
		*r = *t.rare
	}
	t.rare = r
	return r
}

// VersionView is a tag with whether it is blocked and its gate state.
type VersionView struct {
	Tag
	// Gates is the version's state per release gate of its source when the
	// snapshot was built; nil when the source has no gates. Servable is
	// false while a gate holds it: no channel serves it and no resolve
	// answer offers it, as if blocked (a channel's own soak may differ).
	Gates    *GateState
	Blocked  bool
	Servable bool
	// GatesUnchecked: the registry gates (platforms, signature) have not
	// been checked for this digest yet (just indexed, or just started), so
	// Gates holds it on no answer rather than on a finding.
	GatesUnchecked bool
	// RegistryHeld: held by platforms or signature, which no soak lifts.
	RegistryHeld bool
}

// Block marks v blocked, for reason.
func (v *VersionView) Block(reason string) {
	v.Blocked = true
	v.editRare().blockReason = reason
}

// BlockReason is why v is blocked; "" when it is not.
func (v VersionView) BlockReason() string {
	if v.rare == nil {
		return ""
	}
	return v.rare.blockReason
}

// Classify parses a tag under p's scheme and the label map (nil:
// DefaultLabels). It never fails: a tag that does not parse comes back
// with Valid false and Error set.
func (p *Parser) Classify(name string, labels Labels) Tag {
	v, err := p.Parse(name)
	if err != nil {
		return InvalidTag(name, err.Error())
	}
	return Tag{Name: name, Valid: true, Version: v, Stream: labels.StreamOf(v)}
}
