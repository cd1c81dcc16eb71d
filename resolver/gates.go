package resolver

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Gates are a source's release gates (contract section 9). The zero value
// has none, and every version is servable.
type Gates struct {
	Platforms        []string // "os/arch[/variant]": the tag must be an index holding each
	SignatureKeyFile string   // cosign public key; "": no signature gate
	// SignatureKeyID is the key's fingerprint (indexer/gates.Key.ID): a
	// signature checked with another key (before a rotation) does not count.
	SignatureKeyID string
	Soak           time.Duration // indexed at least this long; 0: no soak gate
}

// registry reports whether g has a gate the registry must be asked about.
func (g Gates) registry() bool { return len(g.Platforms) > 0 || g.SignatureKeyFile != "" }

// Enabled reports whether any gate is set.
func (g Gates) Enabled() bool {
	return len(g.Platforms) > 0 || g.SignatureKeyFile != "" || g.Soak > 0
}

// Validate checks what can be checked without I/O; errors name the bad value.
func (g Gates) Validate() error {
	for _, p := range g.Platforms {
		parts := strings.Split(p, "/")
		if len(parts) < 2 || len(parts) > 3 || slices.Contains(parts, "") || strings.ContainsAny(p, " :") {
			return fmt.Errorf("%w: gates.platforms: %q is not os/arch or os/arch/variant", ErrInvalid, p)
		}
	}
	if g.Soak < 0 {
		return fmt.Errorf("%w: gates.soak: %s is negative", ErrInvalid, g.Soak)
	}
	return nil
}

// GateChecks is what the registry said about a version's digest (the
// indexer's gate checker), as stored per tag. A tag not checked yet has
// none: nil.
type GateChecks struct {
	Digest           Digest   // the digest checked
	Platforms        []string // the platforms asked for, as configured then
	MissingPlatforms []string // in the order configured
	KeyID            string   // the key the signature was checked with
	Signature        string   // GateOK, GateMissing or GateInvalid; "": no signature gate then
	SignatureReason  string   // why invalid
	CheckedAt        time.Time
}

// For reports whether c are checks of g's registry gates on digest: the
// same digest, the same platforms and the same key. Checks of another
// digest (a re-tag) or of another configuration (a platform added, a key
// rotated) do not count, and the version is held until checked again.
func (c *GateChecks) For(g Gates, digest Digest) bool {
	if len(g.Platforms) > 0 && !c.PlatformsFor(g, digest) {
		return false
	}
	if c == nil || digest.IsZero() || c.Digest != digest {
		return false
	}
	return g.SignatureKeyFile == "" || (c.KeyID == g.SignatureKeyID && c.Signature != "")
}

// PlatformsFor reports whether c holds a platform check of digest against
// g's platforms. A digest's content never changes, so such a result stands
// for good: the indexer asks only about the signature again.
func (c *GateChecks) PlatformsFor(g Gates, digest Digest) bool {
	return c != nil && !digest.IsZero() && c.Digest == digest && sameSet(c.Platforms, g.Platforms)
}

// NeedsGateCheck reports whether the indexer should ask the registry about
// t's gates on this scan: its digest is known and it has no checks that
// count (never checked, re-tagged, configuration changed), or it is still
// held by platforms or signature (arm64 pushed into the tag later, the
// signature pushed after the image). A version that passed is not asked
// again until the digest re-check schedule says so.
func NeedsGateCheck(g Gates, t *Tag) bool {
	if !g.registry() || !t.Valid || t.Digest.IsZero() {
		return false
	}
	c := t.Gates
	if !c.For(g, t.Digest) {
		return true
	}
	return len(g.Platforms) > 0 && len(c.MissingPlatforms) > 0 ||
		g.SignatureKeyFile != "" && c.Signature != GateOK
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// Gate states, as served.
const (
	GateOK      = "ok"
	GateMissing = "missing"
	GateInvalid = "invalid"
)

// GateState is a version's state per gate, as served under "gates"; a gate
// that is not configured is "".
type GateState struct {
	Platforms string `json:"platforms,omitempty"` // "ok" | "missing linux/arm64,linux/s390x"
	Signature string `json:"signature,omitempty"` // "ok" | "missing" | "invalid"
	Soak      string `json:"soak,omitempty"`      // "ok" | "until 2026-11-23T05:34:23Z"
}

// Held names the gates that hold the version, in a fixed order; empty when
// it is servable. A pin of a held version names these (422), and `force`
// passes only when "soak" is the sole one.
func (s *GateState) Held() []string {
	if s == nil {
		return nil
	}
	var held []string
	for _, g := range []struct{ name, state string }{
		{"platforms", s.Platforms}, {"signature", s.Signature}, {"soak", s.Soak},
	} {
		if g.state != "" && g.state != GateOK {
			held = append(held, g.name)
		}
	}
	return held
}

// EvaluateGates is tag t's gate state at now. Its checks (t.Gates) count
// only when they are of its digest and of g (GateChecks.For): a version not
// yet checked is held (its platforms all missing, its signature missing),
// never served on trust. The soak runs from t.FirstSeen, when it was first
// indexed. soak, when not nil, is a channel's own soak in place of the
// source's. Without any gate the state is nil (served as "gates": null)
// and the version servable.
func EvaluateGates(g Gates, t *Tag, now time.Time, soak *time.Duration) (*GateState, bool) {
	if soak != nil {
		g.Soak = *soak
	}
	if !g.Enabled() {
		return nil, true
	}
	checks := t.Gates
	if !checks.For(g, t.Digest) {
		checks = nil
	}
	var st GateState
	if len(g.Platforms) > 0 {
		missing := g.Platforms
		if checks != nil {
			missing = checks.MissingPlatforms
		}
		st.Platforms = GateOK
		if len(missing) > 0 {
			st.Platforms = "missing " + strings.Join(missing, ",")
		}
	}
	if g.SignatureKeyFile != "" {
		st.Signature = GateMissing
		if checks != nil && checks.Signature != "" {
			st.Signature = checks.Signature
		}
	}
	if g.Soak > 0 {
		st.Soak = SoakState(t.FirstSeen.Time(), g.Soak, now)
	}
	return &st, len(st.Held()) == 0
}

// SoakState is the soak gate's state of a version indexed at indexedAt.
func SoakState(indexedAt time.Time, soak time.Duration, now time.Time) string {
	if until := indexedAt.Add(soak); now.Before(until) {
		return "until " + until.UTC().Format(time.RFC3339)
	}
	return GateOK
}

// Reason says which gates hold the version and how, for a person:
// "platforms missing linux/arm64, soak until 2026-11-23T05:00:00Z".
func (s *GateState) Reason() string {
	var parts []string
	for _, g := range s.Held() {
		switch g {
		case "platforms":
			parts = append(parts, "platforms "+s.Platforms)
		case "signature":
			parts = append(parts, "signature "+s.Signature)
		case "soak":
			parts = append(parts, "soak "+s.Soak)
		}
	}
	return strings.Join(parts, ", ")
}
