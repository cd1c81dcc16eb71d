package console

import (
	"strings"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/resolver"
)

// Release gates on the source page: a gated version is marked apart from a
// blocked one (nobody refused it; a gate has not passed yet), with each
// holding gate and its state.

// heldGates are the gates of g that hold a version, in GateState.Held's
// order.
func heldGates(g *resolver.GateState) []uiGate {
	var out []uiGate
	for _, name := range g.Held() {
		st := map[string]string{"platforms": g.Platforms, "signature": g.Signature, "soak": g.Soak}[name]
		ug := uiGate{Name: name, State: st}
		if until, ok := strings.CutPrefix(st, "until "); ok {
			ug.Until = until
		}
		out = append(out, ug)
	}
	return out
}

// gatesText is a source's gates as the source page lists them.
func gatesText(g resolver.Gates) []string {
	var out []string
	if len(g.Platforms) > 0 {
		out = append(out, "platforms "+strings.Join(g.Platforms, ", "))
	}
	if g.SignatureKeyFile != "" {
		out = append(out, "cosign signature")
	}
	if g.Soak > 0 {
		out = append(out, "soak "+config.ShortDuration(g.Soak))
	}
	return out
}
