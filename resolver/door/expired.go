package door

import (
	"fmt"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
)

// expired is the rule that never starts a channel on an expired version:
// a move (now or for later) whose target's line has ended is refused,
// unless an admin sent allow_expired, which a promotion never does. nil:
// the change goes on to the next rule (v says when allow_expired let it).
func expired(c Change, kind doorKind, v *Verdict) *Verdict {
	l := c.TargetLine
	if l == nil || l.Class != lifecycle.Expired || kind == kindControl {
		return nil
	}
	if c.AllowExpired && c.Door != Promotion {
		v.AllowedExpired = true
		return nil
	}
	msg := fmt.Sprintf("%s is expired: its line %s ended %s", c.Target, l.Line, l.End.UTC().Format(time.DateOnly))
	if l.Successor != "" {
		msg += "; move to " + l.Successor
	}
	if c.Door != Promotion {
		msg += `; an admin may send "allow_expired": true`
	}
	return &Verdict{Outcome: Refuse, Rule: RuleExpired, Err: fmt.Errorf("%w: %s", resolver.ErrExpired, msg)}
}
