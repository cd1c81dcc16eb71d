package store

// Freezes and channel holds (CONTRACT section 15).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store/outboxdb"
)

// CreateFreeze declares a freeze, audited and notified.
func (s *Store) CreateFreeze(ctx context.Context, f resolver.Freeze) (resolver.Freeze, error) {
	err := s.inTx(ctx, "declare a freeze", func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `insert into freezes (channels, from_at, until_at, reason, created_by) values ($1, $2, $3, $4, $5)
			returning id, created_at`, f.Channels, f.From, f.Until, f.Reason, f.CreatedBy).Scan(&f.ID, &f.CreatedAt)
		if err != nil {
			return err
		}
		return freezeEvent(ctx, tx, &f, "freeze", f.CreatedBy)
	})
	return f, err
}

func freezeEvent(ctx context.Context, tx pgx.Tx, f *resolver.Freeze, action, actor string) error {
	text := fmt.Sprintf("freeze %d of [%s] from %s until %s: %s", f.ID, strings.Join(f.Channels, ", "),
		f.From.UTC().Format(time.RFC3339), f.Until.UTC().Format(time.RFC3339), f.Reason)
	if err := audit(ctx, tx, resolver.AuditEvent{Actor: actor, Action: action, Reason: text}); err != nil {
		return err
	}
	if err := outboxdb.Add(ctx, tx, resolver.Event{Type: resolver.EventFreezeChanged, Actor: actor, Reason: action + ": " + text}); err != nil {
		return err
	}
	return nil
}

const freezeCols = `id, channels, from_at, until_at, reason, created_by, created_at, coalesce(cancelled_at, 'epoch'), cancelled_by`

func scanFreeze(row pgx.Row, f *resolver.Freeze) error {
	err := row.Scan(&f.ID, &f.Channels, &f.From, &f.Until, &f.Reason, &f.CreatedBy, &f.CreatedAt, &f.CancelledAt, &f.CancelledBy)
	if f.CancelledAt.Equal(time.Unix(0, 0)) {
		f.CancelledAt = time.Time{}
	}
	return err
}

// Freezes lists the freezes that have not ended by now (cancelled ones
// excluded), soonest first.
func (s *Store) Freezes(ctx context.Context, now time.Time) ([]resolver.Freeze, error) {
	out := []resolver.Freeze{}
	err := s.inTx(ctx, "list freezes", func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `select `+freezeCols+` from freezes where cancelled_at is null and until_at > $1 order by from_at, id`, now)
		if err != nil {
			return err
		}
		out, err = pgx.AppendRows(out[:0], rows, func(r pgx.CollectableRow) (f resolver.Freeze, err error) {
			err = scanFreeze(r, &f)
			return
		})
		return err
	})
	return out, err
}

// CancelFreeze ends a freeze now; ErrNotFound when there is no such
// freeze still to come or running.
func (s *Store) CancelFreeze(ctx context.Context, id int64, actor string) (resolver.Freeze, error) {
	var f resolver.Freeze
	err := s.inTx(ctx, fmt.Sprintf("cancel freeze %d", id), func(tx pgx.Tx) error {
		err := scanFreeze(tx.QueryRow(ctx, `update freezes set cancelled_at = now(), cancelled_by = $2
			where id = $1 and cancelled_at is null and until_at > now() returning `+freezeCols, id, actor), &f)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: no freeze %d running or to come", resolver.ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		return freezeEvent(ctx, tx, &f, "freeze-cancel", actor)
	})
	return f, err
}

// SetHold records (hold non-nil) or lifts channel's hold, and announces
// the change to every replica.
func (s *Store) SetHold(ctx context.Context, channel string, hold *resolver.Hold) error {
	return s.inTx(ctx, fmt.Sprintf("hold channel %q", channel), func(tx pgx.Tx) error {
		var err error
		if hold == nil {
			_, err = tx.Exec(ctx, `delete from channel_holds where channel = $1`, channel)
		} else {
			_, err = tx.Exec(ctx, `insert into channel_holds (channel, version, reason, until_at) values ($1, $2, $3, $4)
				on conflict (channel) do update set version = excluded.version, reason = excluded.reason, until_at = excluded.until_at`,
				channel, hold.Version, hold.Reason, timeOrNull(hold.Until))
		}
		if err != nil {
			return err
		}
		return s.notify(ctx, tx, "hold", "", "channel", channel)
	})
}

// BeginHold records hold for channel unless it is held already, in which
// case only its reason and end change and the version it holds stays
// (whichever replica held it first decided that): every replica may call
// it every second. It announces only a change.
func (s *Store) BeginHold(ctx context.Context, channel string, hold resolver.Hold) error {
	return s.inTx(ctx, fmt.Sprintf("hold channel %q", channel), func(tx pgx.Tx) error {
		res, err := tx.Exec(ctx, `insert into channel_holds (channel, version, reason, until_at) values ($1, $2, $3, $4)
			on conflict (channel) do update set reason = excluded.reason, until_at = excluded.until_at
			where (channel_holds.reason, channel_holds.until_at) is distinct from (excluded.reason, excluded.until_at)`,
			channel, hold.Version, hold.Reason, timeOrNull(hold.Until))
		if err != nil || res.RowsAffected() == 0 {
			return err
		}
		return s.notify(ctx, tx, "hold", "", "channel", channel)
	})
}

func queueHolds(b *pgx.Batch, states map[string]catalog.ChannelState) {
	b.Queue(`select channel, version, reason, coalesce(until_at, 'epoch'), since from channel_holds`).Query(func(rows pgx.Rows) error {
		var ch string
		var h resolver.Hold
		_, err := pgx.ForEachRow(rows, []any{&ch, &h.Version, &h.Reason, &h.Until, &h.Since}, func() error {
			hold := h
			if hold.Until.Equal(time.Unix(0, 0)) {
				hold.Until = time.Time{}
			}
			st := states[ch]
			st.Hold = &hold
			states[ch] = st
			return nil
		})
		return err
	})
}
