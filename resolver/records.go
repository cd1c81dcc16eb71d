package resolver

import "time"

// The records that move between the store and the packages built on it:
// indexing results in, audit events and channel changes out. They
// live here, at the centre, so that server and indexer need not import the
// store (and its driver) to speak to it.

// AnyRevision as ifRevision skips the optimistic-concurrency check.
const AnyRevision int64 = -1

// AuditEvent is one entry of the append-only audit trail.
type AuditEvent struct {
	ID      int64
	At      time.Time
	Actor   string // the token's name
	Action  string // "pin", "unpin", "block", "unblock"
	Channel string // "" for blocks
	Source  string // "" for pins
	From    string // pin/unpin: the version served before (see ChannelChange)
	To      string // pin: the new pin; unpin: the version served after; block/unblock: the version
	Reason  string
}

// ChannelChange is one pin or unpin of a channel.
type ChannelChange struct {
	Channel string
	// Source is the channel's source. When set, Pin refuses a version that
	// is blocked there, inside its transaction: a block made through another
	// replica a moment ago still wins.
	Source     string
	Version    string // Pin: the canonical version; ignored by Unpin
	Digest     string // Pin: the digest captured at promotion
	Actor      string // the token's name
	Reason     string
	IfRevision int64 // the revision the caller saw (from the ETag); AnyRevision: no check
	// From and To are the versions the channel served before and serves
	// after, as the caller's snapshot sees them, so that the audit trail of
	// a rollback reads "from X to Y" even when the channel was following its
	// stream. "" when it served nothing. When From is "", the previous pin
	// is recorded instead; Pin always records Version as To.
	From, To string
	// Rollout is the channel's rollout policy: when set, the change starts
	// a rollout to the new version in the same transaction.
	Rollout *RolloutPolicy
	// Rollback (Pin): the pin may send clusters running a newer version
	// down to it; audited as "rollback".
	Rollback bool
	// Event (Pin): one more notification of this type, beside the
	// channel's change (a promotion's).
	Event string
}

// ScanResult is what one indexing run of one source found.
type ScanResult struct {
	Source   string
	Started  time.Time
	Finished time.Time
	// Complete is true when the whole tag list was read. Only a complete
	// listing marks missing tags absent; an incomplete one changes no tags.
	Complete bool
	Tags     []Tag // classified tags from the listing (excluded tags already dropped)
	Err      error // non-nil: the scan failed; its text is recorded, tags are untouched
	Requests int   // registry requests made
}
