package resolver

import (
	"errors"
	"fmt"
	"regexp"
)

// Scheme names a version grammar.
type Scheme string

const (
	SchemeJuju   Scheme = "juju"   // github.com/juju/version grammar and order
	SchemeSemver Scheme = "semver" // semver 2.0, optional "v", optional build-number suffix
)

// Version is one parsed version. It is a value: compare with Compare, print
// with String. The zero Version is not valid.
type Version struct {
	Scheme Scheme
	Major  int
	Minor  int
	Patch  int // juju: 0 for tagged versions (the tag number is PreNumber)
	// Pre is the pre-release label ("rc", "beta", "alpha"); empty for releases.
	Pre string
	// PreNumber is the number after the label (rc10 -> 10; juju 2.8-beta1 -> 1).
	PreNumber int
	// Prerelease is the whole semver pre-release ("rc.1", "alpha.beta.2"),
	// kept for precedence; for juju it is Pre+PreNumber ("beta1") or "".
	Prerelease string
	// Build is juju's build number, or the semver build revision captured by
	// a source's build pattern (k3s2 -> 2). 0 when absent.
	Build int
	// BuildMeta is the semver build match without "+" ("k3s2"); "" for juju.
	BuildMeta string
	// canonical is String(), computed once at parse time.
	canonical string
}

// String is the canonical spelling: juju's String() for juju, and for semver
// the tag with the build suffix spelled "+<match>".
func (v Version) String() string { return v.canonical }

// IsZero reports whether v is the zero Version (not a parsed version).
func (v Version) IsZero() bool { return v.canonical == "" }

// Parser turns a registry tag into a Version under one scheme.
// A Parser is immutable and safe for concurrent use.
type Parser struct {
	scheme Scheme
	build  *regexp.Regexp // semver only; nil when the source has no build pattern
}

// NewParser returns a parser for scheme. buildPattern (semver only) is a
// regexp whose first capture group is the build number, e.g. `k3s(\d+)`.
func NewParser(scheme Scheme, buildPattern string) (*Parser, error) {
	p := &Parser{scheme: scheme}
	switch scheme {
	case SchemeJuju:
		if buildPattern != "" {
			return nil, fmt.Errorf("%w: build pattern %q: only the semver scheme takes one", ErrInvalid, buildPattern)
		}
	case SchemeSemver:
		// TODO(resolver): compile `[-+](<pattern>)$`, check it has a capture group.
	default:
		return nil, fmt.Errorf("%w: unknown scheme %q (want juju or semver)", ErrInvalid, scheme)
	}
	return p, nil
}

// Scheme is the scheme p parses.
func (p *Parser) Scheme() Scheme { return p.scheme }

// Parse parses one tag. The error names the tag and says why it is not a
// version; it wraps ErrInvalid.
func (p *Parser) Parse(tag string) (Version, error) {
	return Version{}, fmt.Errorf("%w: %q: not implemented", ErrInvalid, tag)
}

// Compare orders two versions of the same scheme: -1, 0 or +1.
// Versions of different schemes order by scheme name (never happens within a source).
func Compare(a, b Version) int {
	panic(errors.New("TODO(resolver)"))
}
