package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/store/outboxdb"
)

// Pin pins c.Channel to c.Version with the digest captured at promotion,
// records an audit event and notifies, in one transaction. When
// c.IfRevision is not resolver.AnyRevision and the channel has moved on, Pin returns
// ErrConflict and changes nothing. Whether the version exists and is
// eligible is the caller's (the snapshot's) business.
func (s *Store) Pin(ctx context.Context, c resolver.ChannelChange) (catalog.ChannelState, error) {
	if c.Channel == "" || c.Version == "" {
		return catalog.ChannelState{}, fmt.Errorf("%w: pin: channel %q, version %q: both are required", resolver.ErrInvalid, c.Channel, c.Version)
	}
	var st catalog.ChannelState
	err := s.inTx(ctx, fmt.Sprintf("pin channel %q", c.Channel), func(tx pgx.Tx) error {
		var err error
		st, err = s.pinTx(ctx, tx, c)
		return err
	})
	return st, err
}

// pinTx is Pin inside tx (a scheduled change applies in its own
// transaction, with its state).
func (s *Store) pinTx(ctx context.Context, tx pgx.Tx, c resolver.ChannelChange) (catalog.ChannelState, error) {
	old, err := lockState(ctx, tx, c.Channel, c.IfRevision)
	if err != nil {
		return catalog.ChannelState{}, err
	}
	if old.Pin == c.Version && old.PinDigest == c.Digest && old.Rollback == c.Rollback {
		// Already pinned there (PUT is idempotent): nothing changes, so
		// nothing is recorded and the revision, hence the ETag, stays.
		return readState(ctx, tx, c.Channel)
	}
	if c.Source != "" {
		var reason string
		err := tx.QueryRow(ctx, `select reason from blocks where source = $1 and version = $2`, c.Source, c.Version).Scan(&reason)
		switch {
		case err == nil:
			return catalog.ChannelState{}, resolver.BlockedError(c.Source, c.Version, reason)
		case !errors.Is(err, pgx.ErrNoRows):
			return catalog.ChannelState{}, err
		}
	}
	st, err := setPin(ctx, tx, c.Channel, c.Version, c.Digest, c.Actor, c.Rollback)
	if err != nil {
		return st, err
	}
	from := c.From
	if from == "" {
		from = old.Pin
	}
	action := "pin"
	if c.Rollback {
		action = "rollback"
	}
	if err := audit(ctx, tx, resolver.AuditEvent{Actor: c.Actor, Action: action, Channel: c.Channel, From: from, To: c.Version, Reason: c.Reason}); err != nil {
		return st, err
	}
	if err := outboxdb.ChannelEvent(ctx, tx, c, from, c.Version); err != nil {
		return st, err
	}
	if c.Event != "" {
		if err := outboxdb.Add(ctx, tx, resolver.Event{Type: c.Event, Channel: c.Channel, From: from, To: c.Version, Actor: c.Actor, Reason: c.Reason}); err != nil {
			return st, err
		}
	}
	if err := rolloutChange(ctx, tx, c, c.Version); err != nil {
		return st, err
	}
	return st, s.notify(ctx, tx, "pin", "", "channel", c.Channel)
}

// Unpin lets c.Channel follow its stream again; ErrNotFound when it is not
// pinned, ErrConflict when c.IfRevision is stale.
func (s *Store) Unpin(ctx context.Context, c resolver.ChannelChange) (catalog.ChannelState, error) {
	var st catalog.ChannelState
	err := s.inTx(ctx, fmt.Sprintf("unpin channel %q", c.Channel), func(tx pgx.Tx) error {
		var err error
		st, err = s.unpinTx(ctx, tx, c)
		return err
	})
	return st, err
}

// unpinTx is Unpin inside tx.
func (s *Store) unpinTx(ctx context.Context, tx pgx.Tx, c resolver.ChannelChange) (catalog.ChannelState, error) {
	old, err := lockState(ctx, tx, c.Channel, c.IfRevision)
	if err != nil {
		return catalog.ChannelState{}, err
	}
	if old.Pin == "" {
		return catalog.ChannelState{}, fmt.Errorf("%w: channel %q is not pinned", resolver.ErrNotFound, c.Channel)
	}
	st, err := setPin(ctx, tx, c.Channel, "", "", "", false)
	if err != nil {
		return st, err
	}
	from := c.From
	if from == "" {
		from = old.Pin
	}
	if err := audit(ctx, tx, resolver.AuditEvent{Actor: c.Actor, Action: "unpin", Channel: c.Channel, From: from, To: c.To, Reason: c.Reason}); err != nil {
		return st, err
	}
	if err := outboxdb.ChannelEvent(ctx, tx, c, from, c.To); err != nil {
		return st, err
	}
	if err := rolloutChange(ctx, tx, c, c.To); err != nil {
		return st, err
	}
	return st, s.notify(ctx, tx, "unpin", "", "channel", c.Channel)
}

// rolloutChange starts, for a channel with a rollout policy, the rollout
// of a pin or an unpin to `to`, in the change's own transaction: no
// replica ever serves the new version to every cluster first.
func rolloutChange(ctx context.Context, tx pgx.Tx, c resolver.ChannelChange, to string) error {
	if c.Rollout == nil || to == "" {
		return nil
	}
	prev, err := latestRolloutPtr(ctx, tx, c.Channel)
	if err != nil {
		return err
	}
	_, err = startRollout(ctx, tx, prev, snapshot.RolloutStart{Channel: c.Channel, Served: c.From, To: to,
		Policy: *c.Rollout, Actor: c.Actor, Reason: c.Reason})
	return err
}

// ChannelState reads one channel's state; a channel never pinned has the
// zero state (revision 0), not an error, because channels live in config.
func (s *Store) ChannelState(ctx context.Context, channel string) (catalog.ChannelState, error) {
	var st catalog.ChannelState
	err := s.inTx(ctx, fmt.Sprintf("read channel %q", channel), func(tx pgx.Tx) error {
		var err error
		st, err = readState(ctx, tx, channel)
		return err
	})
	return st, err
}

func readState(ctx context.Context, tx pgx.Tx, channel string) (catalog.ChannelState, error) {
	var st catalog.ChannelState
	err := tx.QueryRow(ctx, `
		select `+stateCols+` from channel_state where channel = $1`, channel).
		Scan(&st.Pin, &st.PinDigest, &st.PinnedBy, &st.PinnedAt, &st.Revision, &st.UpdatedAt, &st.Rollback)
	if errors.Is(err, pgx.ErrNoRows) {
		return catalog.ChannelState{}, nil
	}
	return normState(st), err
}

// lockState creates the channel's row if needed, locks it for the rest of
// the transaction and checks the caller's revision. Concurrent writers of
// one channel queue on the row lock, so of N writers holding the same
// revision exactly one passes the check.
func lockState(ctx context.Context, tx pgx.Tx, channel string, ifRevision int64) (catalog.ChannelState, error) {
	if _, err := tx.Exec(ctx, `insert into channel_state (channel) values ($1) on conflict do nothing`, channel); err != nil {
		return catalog.ChannelState{}, err
	}
	var st catalog.ChannelState
	err := tx.QueryRow(ctx, `select pin, pin_digest, revision, rollback from channel_state where channel = $1 for update`, channel).Scan(&st.Pin, &st.PinDigest, &st.Revision, &st.Rollback)
	if err != nil {
		return st, err
	}
	if ifRevision != resolver.AnyRevision && ifRevision != st.Revision {
		return st, fmt.Errorf("%w: channel %q changed: revision is %d, request was based on %d", resolver.ErrConflict, channel, st.Revision, ifRevision)
	}
	return st, nil
}

func setPin(ctx context.Context, tx pgx.Tx, channel, version, digest, actor string, rollback bool) (catalog.ChannelState, error) {
	var st catalog.ChannelState
	err := tx.QueryRow(ctx, `
		update channel_state set pin = $2, pin_digest = $3, pinned_by = $4,
			pinned_at = case when $2 = '' then null else now() end,
			revision = revision + 1, updated_at = now(), rollback = $5
		where channel = $1
		returning `+stateCols,
		channel, version, digest, actor, rollback).
		Scan(&st.Pin, &st.PinDigest, &st.PinnedBy, &st.PinnedAt, &st.Revision, &st.UpdatedAt, &st.Rollback)
	return normState(st), err
}

func audit(ctx context.Context, tx pgx.Tx, e resolver.AuditEvent) error {
	_, err := tx.Exec(ctx, `
		insert into audit (actor, action, channel, source, from_version, to_version, reason)
		values ($1, $2, $3, $4, $5, $6, $7)`,
		e.Actor, e.Action, e.Channel, e.Source, e.From, e.To, e.Reason)
	return err
}

// History lists channel's audit events, newest first (empty for a channel
// with none; the store does not know which channels are configured).
func (s *Store) History(ctx context.Context, channel string) ([]resolver.AuditEvent, error) {
	return s.history(ctx, fmt.Sprintf("history of channel %q", channel), `channel = $1`, channel)
}

// ChannelHistory is what a person asks for as a channel's history: its
// own events and the blocks and unblocks of its source (each can change
// what the channel serves), newest first, in one query.
func (s *Store) ChannelHistory(ctx context.Context, channel, source string) ([]resolver.AuditEvent, error) {
	return s.history(ctx, fmt.Sprintf("history of channel %q", channel),
		`channel = $1 or (source = $2 and channel = '' and action in ('block', 'unblock', 'risk-add', 'risk-remove'))`, channel, source)
}

// SourceHistory lists the block/unblock events of source, newest first.
func (s *Store) SourceHistory(ctx context.Context, source string) ([]resolver.AuditEvent, error) {
	return s.history(ctx, fmt.Sprintf("history of source %q", source), `source = $1`, source)
}

func (s *Store) history(ctx context.Context, op, where string, args ...any) ([]resolver.AuditEvent, error) {
	events := []resolver.AuditEvent{}
	err := s.inTx(ctx, op, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			select id, at, actor, action, channel, source, from_version, to_version, reason
			from audit where `+where+` order by at desc, id desc`, args...)
		if err != nil {
			return err
		}
		var e resolver.AuditEvent
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
