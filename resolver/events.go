package resolver

import (
	"slices"
	"time"
)

// Event types of outbound notifications (CloudEvents "type").
const (
	EventChannelChanged = "dev.tidemark.channel.changed"
	// EventChannelPromoted: a channel moved itself to what its promote.from
	// channel answers, on the fleet's evidence.
	EventChannelPromoted = "dev.tidemark.channel.promoted"
	// EventVersionYanked: a version whose clusters got stuck was halted
	// and held on a channel's evidence.
	EventVersionYanked  = "dev.tidemark.version.yanked"
	EventRolloutChanged = "dev.tidemark.rollout.changed"
	EventVersionBlocked = "dev.tidemark.version.blocked"
	// EventRiskChanged: a known risk of Source was declared (To is its
	// name) or removed (From is its name).
	EventRiskChanged = "dev.tidemark.risk.changed"
	// Governance: a change's every step (Channel, To the version, Reason
	// names the change), and a freeze declared or cancelled.
	EventChangeScheduled = "dev.tidemark.change.scheduled"
	EventChangePending   = "dev.tidemark.change.pending"
	EventChangeApproved  = "dev.tidemark.change.approved"
	EventChangeRejected  = "dev.tidemark.change.rejected"
	EventChangeApplied   = "dev.tidemark.change.applied"
	EventChangeFailed    = "dev.tidemark.change.failed"
	EventChangeCancelled = "dev.tidemark.change.cancelled"
	EventFreezeChanged   = "dev.tidemark.freeze.changed"
	// EventLineDeprecated and EventLineExpired: a line of Source (To)
	// crossed into deprecated or expired while Tidemark ran; From is its
	// end (RFC 3339, "" for none) and Reason the active clusters on it
	// then, as a number.
	EventLineDeprecated = "dev.tidemark.line.deprecated"
	EventLineExpired    = "dev.tidemark.line.expired"
)

// Event is one outbound notification as the outbox keeps it.
type Event struct {
	ID int64 // the outbox row; the CloudEvents id derives from it
	// XID is the writing transaction's id: deliveries walk (XID, ID)
	// order, which no late commit can insert behind.
	XID     int64
	At      time.Time
	Type    string // one of the Event* constants
	Channel string // "" for a block
	Source  string
	From    string // the version served before ("" for none)
	To      string // the version served after; for a block, the blocked version
	Actor   string // the token's name, or "indexer" for a new version
	Reason  string
}

// EventFilter is the events one endpoint wants: those of Channels, and the
// blocks of their Sources. Both nil: every event.
type EventFilter struct {
	Channels []string
	Sources  []string
}

// Wants reports whether e passes the filter.
func (f EventFilter) Wants(e Event) bool {
	if f.Channels == nil && f.Sources == nil {
		return true
	}
	if e.Channel != "" {
		return slices.Contains(f.Channels, e.Channel)
	}
	return slices.Contains(f.Sources, e.Source)
}

// NotifyCursor is one endpoint's delivery position: every event it wants up
// to LastID has been delivered. Attempts and LastError describe the event
// after it while deliveries fail.
type NotifyCursor struct {
	Endpoint    string
	LastXID     int64 // with LastID: every wanted event at or before (LastXID, LastID) is delivered
	LastID      int64
	Attempts    int
	NextAttempt time.Time
	LastError   string
	DeliveredAt time.Time // zero: never delivered
}

// Delivery is one attempt to send an event to an endpoint.
type Delivery struct {
	Event    Event
	Attempts int           // including this one
	Err      error         // the send's error; nil: delivered
	Retry    time.Duration // when Err is set: the wait before the next attempt
}

// Delivered reports whether e is at or behind c: sent to c's endpoint
// (if it wanted it).
func (c NotifyCursor) Delivered(e Event) bool {
	return e.XID < c.LastXID || (e.XID == c.LastXID && e.ID <= c.LastID)
}
