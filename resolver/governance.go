package resolver

import (
	"fmt"
	"path"
	"time"
	_ "time/tzdata" // windows name IANA zones; a minimal image has no zoneinfo
)

// Governance (CONTRACT section 15): changes scheduled for later or waiting
// for approvals, weekly windows in which a channel may move, and freezes.

// Change states.
const (
	ChangeScheduled = "scheduled" // applied by the leader at At
	ChangePending   = "pending"   // waiting for approvals
	ChangeDone      = "done"
	ChangeFailed    = "failed"
	ChangeCancelled = "cancelled"
	ChangeRejected  = "rejected"
)

// ChangeStates are every state, for validating a filter.
var ChangeStates = []string{ChangeScheduled, ChangePending, ChangeDone, ChangeFailed, ChangeCancelled, ChangeRejected}

// ScheduledChange is a pin or unpin made for later, or waiting for
// approvals.
type ScheduledChange struct {
	ID          int64
	Channel     string
	Action      string // "pin" or "unpin"
	Version     string // canonical; "" for unpin
	Reason      string
	At          time.Time // when to apply; zero: as soon as approved
	State       string
	RequestedBy string
	CreatedAt   time.Time
	// Approvals: how many distinct identities other than the requester
	// must approve (0: none), until ExpiresAt.
	ApprovalsNeeded int
	ExpiresAt       time.Time
	Approvals       []Approval
	Force           bool
	Rollback        bool
	// Override: an admin requested it with override_freeze; once approved
	// it applies at once, a freeze or a closed window notwithstanding.
	Override bool
	// RequesterIdentity is who requested it as an identity (Principal's),
	// who may not approve it; RequestedBy is the actor the audit shows.
	RequesterIdentity string
	DecidedAt         time.Time // when it left scheduled/pending
	Outcome           string    // why it failed, who cancelled, ...
}

// Approval is one identity's decision on a pending change.
type Approval struct {
	Identity string // the principal's identity: distinct ones count
	Actor    string // as the audit and the API show it
	Approve  bool
	At       time.Time
	Reason   string
}

// Approvers names those who approved.
func (c *ScheduledChange) Approvers() []string {
	var out []string
	for _, a := range c.Approvals {
		if a.Approve {
			out = append(out, cmpOr(a.Actor, a.Identity))
		}
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Freeze holds channels matching Channels (names or globs) from From until
// Until: they keep their answer and refuse pins unless an admin overrides.
type Freeze struct {
	ID          int64
	Channels    []string
	From, Until time.Time
	Reason      string
	CreatedBy   string
	CreatedAt   time.Time
	CancelledAt time.Time
	CancelledBy string
}

// Covers reports whether f holds channel at t.
func (f *Freeze) Covers(channel string, t time.Time) bool {
	if !f.CancelledAt.IsZero() || t.Before(f.From) || !t.Before(f.Until) {
		return false
	}
	for _, g := range f.Channels {
		if ok, _ := path.Match(g, channel); ok {
			return true
		}
	}
	return false
}

// Hold is a channel's answer held where it was: outside its windows or
// during a freeze. The leader records it (the version the channel
// answered when the hold began); every replica serves it.
type Hold struct {
	Version string    // canonical
	Reason  string    // "window" or the freeze's reason
	Until   time.Time // the next window's start or the freeze's end; zero: unknown
	Since   time.Time
}

// Window is a weekly time in which a channel's answer may move.
type Window struct {
	Days       [7]bool // by time.Weekday
	Start, End int     // minutes after midnight; End < Start runs past midnight
	Location   *time.Location
}

// Open reports whether t is inside w.
func (w *Window) Open(t time.Time) bool {
	lt := t.In(w.Location)
	m := lt.Hour()*60 + lt.Minute()
	if w.Start < w.End {
		return w.Days[lt.Weekday()] && m >= w.Start && m < w.End
	}
	// Past midnight: from Start on a listed day, or before End on the day
	// after a listed day.
	if w.Days[lt.Weekday()] && m >= w.Start {
		return true
	}
	return m < w.End && w.Days[(lt.Weekday()+6)%7]
}

// InWindow reports whether t is inside any of ws (true with none: a
// channel without windows may always move).
func InWindow(ws []Window, t time.Time) bool {
	if len(ws) == 0 {
		return true
	}
	for i := range ws {
		if ws[i].Open(t) {
			return true
		}
	}
	return false
}

// NextWindow is the next start of any of ws after t (at minute
// resolution, within 8 days); zero when none.
func NextWindow(ws []Window, t time.Time) time.Time {
	if len(ws) == 0 {
		return time.Time{}
	}
	c := t.Truncate(time.Minute).Add(time.Minute)
	for end := t.Add(8 * 24 * time.Hour); c.Before(end); c = c.Add(time.Minute) {
		if InWindow(ws, c) && !InWindow(ws, c.Add(-time.Minute)) {
			return c
		}
	}
	return time.Time{}
}

// ParseDays reads mon..sun into a weekday set.
func ParseDays(days []string) ([7]bool, error) {
	var out [7]bool
	names := map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
		"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}
	if len(days) == 0 {
		return out, fmt.Errorf("no days (want some of mon, tue, wed, thu, fri, sat, sun)")
	}
	for _, d := range days {
		wd, ok := names[d]
		if !ok {
			return out, fmt.Errorf("unknown day %q (want mon, tue, wed, thu, fri, sat or sun)", d)
		}
		out[wd] = true
	}
	return out, nil
}

// ParseClock reads "HH:MM" as minutes after midnight.
func ParseClock(s string) (int, error) {
	t, err := time.Parse("15:04", s)
	if err != nil || len(s) != 5 {
		return 0, fmt.Errorf("%q is not a time of day like 09:00", s)
	}
	return t.Hour()*60 + t.Minute(), nil
}
