package resolver

import (
	"fmt"
	"strings"
)

// Refusals of a pin that the snapshot's plan and the store's transaction
// both give, with the same words.

// BlockedError is why a blocked version cannot be pinned. A block is a
// statement about the image itself (broken, vulnerable); force is about
// channel policy, so the stronger statement wins: unblock first.
func BlockedError(source, version, reason string) error {
	if reason == "" {
		reason = "no reason given"
	}
	return fmt.Errorf("%w: %s of %q is blocked (%s); unblock it first", ErrUnprocessable, version, source, reason)
}

// GatedError is why a version held by release gates cannot be pinned,
// naming the gates. force overrides a soak (a person decides the version
// has aged enough), never an incomplete or unsigned image: onlySoak says
// whether force would pass.
func GatedError(channel, version string, st *GateState) error {
	held := st.Held()
	hint := `; force overrides only "soak"`
	if len(held) == 1 && held[0] == "soak" {
		hint = `; to pin it anyway, send "force": true (tidemark promote --force)`
	}
	return fmt.Errorf("%w: pin %q: %s is held by release gate %s (%s)%s", ErrUnprocessable, channel, version,
		strings.Join(held, " and "), st.Reason(), hint)
}

// RegistryGates names the registry gates (platforms, signature) in st.
func RegistryGates(st *GateState) []string {
	var out []string
	for _, g := range st.Held() {
		if g != "soak" {
			out = append(out, g)
		}
	}
	return out
}
