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
	Platforms        []string      // "os/arch[/variant]": the tag must be an index holding each
	SignatureKeyFile string        // cosign public key; "": no signature gate
	Soak             time.Duration // indexed at least this long; 0: no soak gate
}

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
// indexer's gate checker). A version not checked yet has none: nil.
type GateChecks struct {
	MissingPlatforms []string // in the order configured
	Signature        string   // GateOK, GateMissing or GateInvalid
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

// EvaluateGates is a version's gate state at now. checks is nil until the
// registry has been asked: a version not yet checked is held (its platforms
// all missing, its signature missing), never served on trust. soak, when
// not nil, is a channel's own soak in place of the source's. Without any
// gate the state is nil (served as "gates": null) and the version servable.
func EvaluateGates(g Gates, checks *GateChecks, indexedAt, now time.Time, soak *time.Duration) (*GateState, bool) {
	if soak != nil {
		g.Soak = *soak
	}
	if !g.Enabled() {
		return nil, true
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
		st.Soak = GateOK
		if until := indexedAt.Add(g.Soak); now.Before(until) {
			st.Soak = "until " + until.UTC().Format(time.RFC3339)
		}
	}
	return &st, len(st.Held()) == 0
}
