package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
)

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
	From    string // pin/unpin: the version served before (see Change)
	To      string // pin: the new pin; unpin: the version served after; block/unblock: the version
	Reason  string
}

// Change is one pin or unpin of a channel.
type Change struct {
	Channel    string
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
}

// Pin pins c.Channel to c.Version with the digest captured at promotion,
// records an audit event and notifies, in one transaction. When
// c.IfRevision is not AnyRevision and the channel has moved on, Pin returns
// ErrConflict and changes nothing. Whether the version exists and is
// eligible is the caller's (the snapshot's) business.
func (s *Store) Pin(ctx context.Context, c Change) (resolver.ChannelState, error) {
	if c.Channel == "" || c.Version == "" {
		return resolver.ChannelState{}, fmt.Errorf("%w: pin: channel %q, version %q: both are required", resolver.ErrInvalid, c.Channel, c.Version)
	}
	var st resolver.ChannelState
	err := s.inTx(ctx, fmt.Sprintf("pin channel %q", c.Channel), func(tx pgx.Tx) error {
		old, err := lockState(ctx, tx, c.Channel, c.IfRevision)
		if err != nil {
			return err
		}
		st, err = setPin(ctx, tx, c.Channel, c.Version, c.Digest, c.Actor)
		if err != nil {
			return err
		}
		from := c.From
		if from == "" {
			from = old.Pin
		}
		if err := audit(ctx, tx, AuditEvent{Actor: c.Actor, Action: "pin", Channel: c.Channel, From: from, To: c.Version, Reason: c.Reason}); err != nil {
			return err
		}
		return notify(ctx, tx, payload("pin", "", "channel", c.Channel))
	})
	return st, err
}

// Unpin lets c.Channel follow its stream again; ErrNotFound when it is not
// pinned, ErrConflict when c.IfRevision is stale.
func (s *Store) Unpin(ctx context.Context, c Change) (resolver.ChannelState, error) {
	var st resolver.ChannelState
	err := s.inTx(ctx, fmt.Sprintf("unpin channel %q", c.Channel), func(tx pgx.Tx) error {
		old, err := lockState(ctx, tx, c.Channel, c.IfRevision)
		if err != nil {
			return err
		}
		if old.Pin == "" {
			return fmt.Errorf("%w: channel %q is not pinned", resolver.ErrNotFound, c.Channel)
		}
		st, err = setPin(ctx, tx, c.Channel, "", "", "")
		if err != nil {
			return err
		}
		from := c.From
		if from == "" {
			from = old.Pin
		}
		if err := audit(ctx, tx, AuditEvent{Actor: c.Actor, Action: "unpin", Channel: c.Channel, From: from, To: c.To, Reason: c.Reason}); err != nil {
			return err
		}
		return notify(ctx, tx, payload("unpin", "", "channel", c.Channel))
	})
	return st, err
}

// ChannelState reads one channel's state; a channel never pinned has the
// zero state (revision 0), not an error, because channels live in config.
func (s *Store) ChannelState(ctx context.Context, channel string) (resolver.ChannelState, error) {
	var st resolver.ChannelState
	err := s.inTx(ctx, fmt.Sprintf("read channel %q", channel), func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
			select pin, pin_digest, pinned_by, coalesce(pinned_at, 'epoch'), revision, updated_at
			from channel_state where channel = $1`, channel).
			Scan(&st.Pin, &st.PinDigest, &st.PinnedBy, &st.PinnedAt, &st.Revision, &st.UpdatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		st = normState(st)
		return err
	})
	return st, err
}

// lockState creates the channel's row if needed, locks it for the rest of
// the transaction and checks the caller's revision. Concurrent writers of
// one channel queue on the row lock, so of N writers holding the same
// revision exactly one passes the check.
func lockState(ctx context.Context, tx pgx.Tx, channel string, ifRevision int64) (resolver.ChannelState, error) {
	if _, err := tx.Exec(ctx, `insert into channel_state (channel) values ($1) on conflict do nothing`, channel); err != nil {
		return resolver.ChannelState{}, err
	}
	var st resolver.ChannelState
	err := tx.QueryRow(ctx, `select pin, revision from channel_state where channel = $1 for update`, channel).Scan(&st.Pin, &st.Revision)
	if err != nil {
		return st, err
	}
	if ifRevision != AnyRevision && ifRevision != st.Revision {
		return st, fmt.Errorf("%w: channel %q changed: revision is %d, request was based on %d", resolver.ErrConflict, channel, st.Revision, ifRevision)
	}
	return st, nil
}

func setPin(ctx context.Context, tx pgx.Tx, channel, version, digest, actor string) (resolver.ChannelState, error) {
	var st resolver.ChannelState
	err := tx.QueryRow(ctx, `
		update channel_state set pin = $2, pin_digest = $3, pinned_by = $4,
			pinned_at = case when $2 = '' then null else now() end,
			revision = revision + 1, updated_at = now()
		where channel = $1
		returning pin, pin_digest, pinned_by, coalesce(pinned_at, 'epoch'), revision, updated_at`,
		channel, version, digest, actor).
		Scan(&st.Pin, &st.PinDigest, &st.PinnedBy, &st.PinnedAt, &st.Revision, &st.UpdatedAt)
	return normState(st), err
}

func audit(ctx context.Context, tx pgx.Tx, e AuditEvent) error {
	_, err := tx.Exec(ctx, `
		insert into audit (actor, action, channel, source, from_version, to_version, reason)
		values ($1, $2, $3, $4, $5, $6, $7)`,
		e.Actor, e.Action, e.Channel, e.Source, e.From, e.To, e.Reason)
	return err
}

// History lists channel's audit events, newest first (empty for a channel
// with none; the store does not know which channels are configured).
func (s *Store) History(ctx context.Context, channel string) ([]AuditEvent, error) {
	return s.history(ctx, fmt.Sprintf("history of channel %q", channel), `channel = $1`, channel)
}

// SourceHistory lists the block/unblock events of source, newest first.
func (s *Store) SourceHistory(ctx context.Context, source string) ([]AuditEvent, error) {
	return s.history(ctx, fmt.Sprintf("history of source %q", source), `source = $1`, source)
}

func (s *Store) history(ctx context.Context, op, where, arg string) ([]AuditEvent, error) {
	events := []AuditEvent{}
	err := s.inTx(ctx, op, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			select id, at, actor, action, channel, source, from_version, to_version, reason
			from audit where `+where+` order by id desc`, arg)
		if err != nil {
			return err
		}
		var e AuditEvent
		_, err = pgx.ForEachRow(rows, []any{&e.ID, &e.At, &e.Actor, &e.Action, &e.Channel, &e.Source, &e.From, &e.To, &e.Reason}, func() error {
			events = append(events, e)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return events, nil
}
