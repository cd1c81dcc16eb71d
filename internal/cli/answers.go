package cli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/openapi"
)

// What a write's answer says, as a person reads it: a pin done, a pin
// taken but held (a freeze overridden, a closed window), or a change that
// waits for approvals (202), never one for another.

// asChange reads raw as a change (a 202's body: the pin or unpin waits
// for approvals); ok false for a channel object.
func asChange(raw []byte) (openapi.Change, bool) {
	var probe struct {
		ID    int64  `json:"id"`
		State string `json:"state"`
	}
	if json.Unmarshal(raw, &probe) != nil || probe.ID == 0 || probe.State == "" {
		return openapi.Change{}, false
	}
	var ch openapi.Change
	if json.Unmarshal(raw, &ch) != nil {
		return openapi.Change{}, false
	}
	return ch, true
}

// printChannelWrite prints a pin's or an unpin's answer: a change that
// waits for approvals (202: nothing changed yet), or the channel after it,
// as then says.
func (f *clientFlags) printChannelWrite(e *Env, raw []byte, then func(after openapi.Channel) error) error {
	if ch, ok := asChange(raw); ok {
		return f.output.print(e.Stdout, raw, func() error { return printChange(e, ch) })
	}
	var after openapi.Channel
	if err := decodeAnswer(raw, &after); err != nil {
		return err
	}
	return f.output.print(e.Stdout, raw, func() error { return then(after) })
}

func decodeAnswer(raw []byte, out any) error {
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("the answer is not the JSON expected: %w", err)
	}
	return nil
}

// printPin says what a pin did: nothing (already so), a rollback pin
// made of a plain one, or a move, with what clusters on newer versions do
// and whether the channel holds its old answer for now.
func printPin(e *Env, name string, before, after openapi.Channel, rollback bool, etagBefore, etagAfter string) error {
	from, to := OrDash(deref(before.Version)), OrDash(deref(after.Version))
	var line string
	switch {
	case before.Pinned && etagBefore != "" && etagAfter == etagBefore:
		// The server records nothing for a pin already in place.
		line = fmt.Sprintf("%s: already pinned to %s", name, to)
	case before.Pinned && rollback && deref(before.Version) == deref(after.Version):
		line = fmt.Sprintf("%s: now a rollback pin to %s: clusters on newer versions are sent down to it", name, to)
	case before.Pinned && deref(before.Version) == deref(after.Version):
		// The configuration's latest: fixed it; the pin answers the same
		// and takes over from the configuration.
		line = fmt.Sprintf("%s: pinned to %s, which it already served (fixed in the configuration); the pin now decides (tidemark unpin %s hands it back)", name, to, name)
	default:
		line = fmt.Sprintf("%s: %s -> %s (pinned)", name, from, to)
		if older(deref(after.Version), deref(before.Version)) {
			if rollback {
				line += "; a rollback: clusters on newer versions are sent down to it"
			} else {
				line += "; clusters already on newer versions keep theirs (add --rollback to send them down)"
			}
		}
		if p := after.RollsOut; p != nil && from != to && from != "-" {
			line += rolloutStarts(p, name, from)
		}
	}
	_, err := fmt.Fprintln(e.Stdout, line+heldNote(after))
	return err
}

// rolloutStarts says that a pin on a channel with rollout: starts one,
// and how long it takes at the least (a pause or a halt makes it longer).
func rolloutStarts(p *openapi.RolloutPolicy, name, from string) string {
	steps := make([]string, len(p.Steps))
	for i, n := range p.Steps {
		steps[i] = strconv.Itoa(n)
	}
	every := time.Duration(p.IntervalSeconds) * time.Second
	all := time.Duration(max(len(p.Steps)-1, 0)) * every
	return fmt.Sprintf("; a rollout starts: %s %% of clusters, a step every %s, all of them in %s unless paused "+
		"(tidemark rollout %s); until then a request with no cluster ID gets %s",
		strings.Join(steps, ", "), config.ShortDuration(every), config.ShortDuration(all), name, from)
}

// heldNote says why a channel's answer does not move yet: a freeze or a
// window holds it.
func heldNote(ch openapi.Channel) string {
	h := ch.Held
	if h == nil {
		return ""
	}
	why := "its window is closed"
	if h.Reason != "window" {
		why = "it is frozen (" + h.Reason + ")"
	}
	until := ""
	if h.Until != nil {
		until = " until " + Stamp(*h.Until)
	}
	return fmt.Sprintf("; held: %s, so it answers %s%s", why, OrDash(deref(ch.Version)), until)
}

// older reports whether canonical version a sorts below b by their
// numbers (a rough reading for the message; the server decides).
func older(a, b string) bool {
	if a == "" || b == "" || a == b {
		return false
	}
	pa, pb := numbers(a), numbers(b)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return len(pa) < len(pb)
}

func numbers(v string) []int {
	var out []int
	n, in := 0, false
	for _, r := range strings.TrimPrefix(v, "v") {
		if r >= '0' && r <= '9' {
			n, in = n*10+int(r-'0'), true
			continue
		}
		if in {
			out = append(out, n)
			n, in = 0, false
		}
	}
	if in {
		out = append(out, n)
	}
	return out
}
