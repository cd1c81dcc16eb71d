package door

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
)

// TestNoDoorStartsAChannelOnAnExpiredVersion: every move to a version
// whose line has expired is refused (rule expired), an admin's
// allow_expired lets a person's or a scheduled move through (never a
// promotion), anyone else's allow_expired is a scope refusal, and
// safety actions and rollout controls pass.
func TestNoDoorStartsAChannelOnAnExpiredVersion(t *testing.T) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	end := time.Date(2026, 10, 28, 0, 0, 0, 0, time.UTC)
	line := &lifecycle.Line{Line: "1.31", End: end, Successor: "1.32", Class: lifecycle.Expired}
	promoter := resolver.Principal{Name: "ci", Scopes: []string{"promote"}}
	admin := resolver.Principal{Name: "root", Scopes: []string{"admin"}}
	for _, d := range Doors {
		kind := doorKinds[d]
		move := kind != kindSafety && kind != kindControl
		t.Run(string(d), func(t *testing.T) {
			c := Change{Door: d, Channel: "stable", Target: "v1.31.4", TargetLine: line}
			v := Decide(c, promoter, Governance{}, now)
			if got := v.Outcome == Refuse && v.Rule == RuleExpired; got != move {
				t.Fatalf("expired target: %s, refused as expired %v, want %v", outcomeText(v), got, move)
			}
			if move && (!errors.Is(v.Err, resolver.ErrExpired) || !strings.Contains(v.Err.Error(), "1.31 ended 2026-10-28; move to 1.32")) {
				t.Errorf("refusal %v", v.Err)
			}
			c.AllowExpired = true
			if v := Decide(c, promoter, Governance{}, now); v.Rule != RuleScope || !errors.Is(v.Err, resolver.ErrScope) {
				t.Errorf("a promoter's allow_expired: %s", outcomeText(v))
			}
			v = Decide(c, admin, Governance{}, now)
			if wantRefused := move && d == Promotion; (v.Outcome == Refuse) != wantRefused {
				t.Errorf("an admin's allow_expired: %s, refused want %v", outcomeText(v), wantRefused)
			}
			if move && d != Promotion && !v.AllowedExpired {
				t.Errorf("an admin's allow_expired is not recorded: %+v", v)
			}
			line.Class = lifecycle.Deprecated
			defer func() { line.Class = lifecycle.Expired }()
			c.AllowExpired = false
			if v := Decide(c, promoter, Governance{}, now); v.Outcome == Refuse {
				t.Errorf("a deprecated target is refused: %s", outcomeText(v))
			}
		})
	}
}
