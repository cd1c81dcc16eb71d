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
	From    string // pin: the previous pin ("" when the channel followed its stream)
	To      string // pin: the new pin; block/unblock: the version
	Reason  string
}

// Pin pins channel to version (canonical) with the digest captured at
// promotion, records an audit event and notifies, in one transaction.
// ifRevision is the revision the caller saw (from the ETag); when it is not
// AnyRevision and the channel has moved on, Pin returns ErrConflict and
// changes nothing. Whether version exists and is eligible is the caller's
// (the snapshot's) business.
func (s *Store) Pin(ctx context.Context, channel, version, digest, actor, reason string, ifRevision int64) (resolver.ChannelState, error) {
	if channel == "" || version == "" {
		return resolver.ChannelState{}, fmt.Errorf("%w: pin: channel %q, version %q: both are required", resolver.ErrInvalid, channel, version)
	}
	var st resolver.ChannelState
	err := s.inTx(ctx, fmt.Sprintf("pin channel %q", channel), func(tx pgx.Tx) error {
		old, err := lockState(ctx, tx, channel, ifRevision)
		if err != nil {
			return err
		}
		st, err = setPin(ctx, tx, channel, version, digest, actor)
		if err != nil {
			return err
		}
		if err := audit(ctx, tx, AuditEvent{Actor: actor, Action: "pin", Channel: channel, From: old.Pin, To: version, Reason: reason}); err != nil {
			return err
		}
		return notify(ctx, tx, payload("pin", "", "channel", channel))
	})
	return st, err
}

// Unpin lets channel follow its stream again; ErrNotFound when it is not
// pinned, ErrConflict when ifRevision is stale.
func (s *Store) Unpin(ctx context.Context, channel, actor, reason string, ifRevision int64) (resolver.ChannelState, error) {
	var st resolver.ChannelState
	err := s.inTx(ctx, fmt.Sprintf("unpin channel %q", channel), func(tx pgx.Tx) error {
		old, err := lockState(ctx, tx, channel, ifRevision)
		if err != nil {
			return err
		}
		if old.Pin == "" {
			return fmt.Errorf("%w: channel %q is not pinned", resolver.ErrNotFound, channel)
		}
		st, err = setPin(ctx, tx, channel, "", "", "")
		if err != nil {
			return err
		}
		if err := audit(ctx, tx, AuditEvent{Actor: actor, Action: "unpin", Channel: channel, From: old.Pin, Reason: reason}); err != nil {
			return err
		}
		return notify(ctx, tx, payload("unpin", "", "channel", channel))
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
