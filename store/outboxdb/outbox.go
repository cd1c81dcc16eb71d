// Package outboxdb is the notification outbox in Postgres: events written
// in the transaction of the change they describe (Add, ChannelEvent),
// each endpoint's cursor, delivery in commit order, the backlog and the
// recent events. *store.Store embeds its Outbox.
package outboxdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store/internal/pg"
)

// Outbox is the outbox's part of the store.
type Outbox struct{ db *pg.DB }

// New is the outbox's part of the store on db.
func New(db *pg.DB) *Outbox { return &Outbox{db: db} }

// Add writes e into the outbox inside tx: the event exists exactly
// when the change it reports committed.
func Add(ctx context.Context, tx pgx.Tx, e resolver.Event) error {
	_, err := tx.Exec(ctx, `
		insert into outbox (type, channel, source, from_version, to_version, actor, reason)
		values ($1, $2, $3, $4, $5, $6, $7)`,
		e.Type, e.Channel, e.Source, e.From, e.To, e.Actor, e.Reason)
	return err
}

// AddEvents writes events into the outbox in one transaction: the events
// that are not a store write's own (a served version moved by indexing, a
// rollout step).
func (s *Outbox) AddEvents(ctx context.Context, events []resolver.Event) error {
	if len(events) == 0 {
		return nil
	}
	return s.db.InTx(ctx, fmt.Sprintf("add %d outbox events", len(events)), func(tx pgx.Tx) error {
		for _, e := range events {
			if err := Add(ctx, tx, e); err != nil {
				return err
			}
		}
		return nil
	})
}

// StartCursor creates endpoint's cursor at the newest event if it has none:
// a new endpoint receives what happens from now on, not the past.
func (s *Outbox) StartCursor(ctx context.Context, endpoint string) error {
	return s.db.InTx(ctx, fmt.Sprintf("start notification cursor %q", endpoint), func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			insert into notify_cursors (endpoint, last_xid, last_id)
			select $1, coalesce(max(xid), '0'), coalesce(max(id), 0) from outbox
			on conflict (endpoint) do nothing`, endpoint)
		return err
	})
}

// DeliverNext sends endpoint's next wanted event, if one is due, holding no
// transaction while it waits on the receiver: a first transaction claims
// the event (the cursor row's next_attempt moves past the claim's lease, so
// other replicas leave the endpoint alone, and its claim number moves on),
// send runs with no connection held, then a second transaction records the
// outcome if the claim is still this one's. Success moves the cursor past
// the event; failure keeps it, counts the attempt and puts the next one
// off by backoff(attempts). A claim whose holder died expires after lease
// and the event is sent again: at least once. ok is false when nothing was
// due (no cursor, cursor claimed or waiting out its backoff, or no event).
//
// Events are read in (xid, id) order and only below the oldest running
// transaction (see migrations/010_outbox_horizon.sql), so an event whose
// transaction commits late is still ahead of the cursor when it appears.
func (s *Outbox) DeliverNext(ctx context.Context, endpoint string, f resolver.EventFilter,
	send func(context.Context, resolver.Event) error, backoff func(attempts int) time.Duration) (d resolver.Delivery, ok bool, err error) {
	const lease = time.Minute
	var claim int64
	err = s.db.InTx(ctx, fmt.Sprintf("claim delivery to %q", endpoint), func(tx pgx.Tx) error {
		// The horizon is read first, before this transaction takes a
		// transaction id of its own by locking the cursor.
		var horizon int64
		if err := tx.QueryRow(ctx, `select pg_snapshot_xmin(pg_current_snapshot())::text::bigint`).Scan(&horizon); err != nil {
			return err
		}
		var lastXID int64
		var last int64
		var attempts int
		err := tx.QueryRow(ctx, `
			select last_xid::text::bigint, last_id, attempts from notify_cursors
			where endpoint = $1 and next_attempt <= now()
			for update skip locked`, endpoint).Scan(&lastXID, &last, &attempts)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		e, found, err := nextEvent(ctx, tx, lastXID, last, horizon, f)
		if err != nil || !found {
			return err
		}
		ok = true
		d = resolver.Delivery{Event: e, Attempts: attempts + 1}
		return tx.QueryRow(ctx, `
			update notify_cursors set claim = claim + 1,
				next_attempt = now() + $2 * interval '1 microsecond'
			where endpoint = $1 returning claim`, endpoint, lease.Microseconds()).Scan(&claim)
	})
	if err != nil || !ok {
		return resolver.Delivery{}, false, err
	}
	sendCtx, cancel := context.WithTimeout(ctx, lease/2)
	d.Err = send(sendCtx, d.Event)
	cancel()
	if d.Err != nil {
		d.Retry = backoff(d.Attempts)
	}
	// The outcome is recorded even when ctx ended during the send (a
	// shutdown): otherwise the claim would hold the endpoint for its whole
	// lease after a restart.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err = s.db.InTx(rctx, fmt.Sprintf("record delivery to %q", endpoint), func(tx pgx.Tx) error {
		if d.Err == nil {
			_, err := tx.Exec(rctx, `
				update notify_cursors set last_xid = $3::bigint::text::xid8, last_id = $4, attempts = 0,
					last_error = '', next_attempt = now(), delivered_at = now()
				where endpoint = $1 and claim = $2`, endpoint, claim, d.Event.XID, d.Event.ID)
			return err
		}
		_, err := tx.Exec(rctx, `
			update notify_cursors set attempts = $3, last_error = $4,
				next_attempt = now() + $5 * interval '1 microsecond'
			where endpoint = $1 and claim = $2`, endpoint, claim, d.Attempts, pg.OneLine(d.Err.Error()), d.Retry.Microseconds())
		return err
	})
	return d, true, err
}

const eventColumns = `id, xid::text::bigint, at, type, channel, source, from_version, to_version, actor, reason`

func scanEvent(row pgx.Row, e *resolver.Event) error {
	return row.Scan(&e.ID, &e.XID, &e.At, &e.Type, &e.Channel, &e.Source, &e.From, &e.To, &e.Actor, &e.Reason)
}

// filterSQL is f as a condition on outbox rows, with f's arrays as $n and
// $n+1 (a nil array: no filter).
func filterSQL(n int) string {
	return fmt.Sprintf(`($%d::text[] is null or channel = any($%d) or (channel = '' and source = any($%d)))`, n, n, n+1)
}

func filterArgs(f resolver.EventFilter) []any {
	if f.Channels == nil && f.Sources == nil {
		return []any{nil, nil}
	}
	return []any{append([]string{}, f.Channels...), append([]string{}, f.Sources...)}
}

// nextEvent is the first event after (afterXID, after) that f wants,
// written by a transaction older than horizon (so finished).
func nextEvent(ctx context.Context, tx pgx.Tx, afterXID, after, horizon int64, f resolver.EventFilter) (resolver.Event, bool, error) {
	var e resolver.Event
	err := scanEvent(tx.QueryRow(ctx, `select `+eventColumns+` from outbox
		where (xid, id) > ($1::bigint::text::xid8, $2) and xid < $3::bigint::text::xid8 and `+filterSQL(4)+`
		order by xid, id limit 1`,
		append([]any{afterXID, after, horizon}, filterArgs(f)...)...), &e)
	if errors.Is(err, pgx.ErrNoRows) {
		return e, false, nil
	}
	return e, err == nil, err
}

// Backlog counts the events endpoint wants and has not been sent.
func (s *Outbox) Backlog(ctx context.Context, endpoint string, f resolver.EventFilter) (int, error) {
	var n int
	err := s.db.InTx(ctx, fmt.Sprintf("backlog of %q", endpoint), func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `
			select count(*) from outbox, notify_cursors c
			where c.endpoint = $1 and (xid, id) > (c.last_xid, c.last_id) and `+filterSQL(2),
			append([]any{endpoint}, filterArgs(f)...)...).Scan(&n)
	})
	return n, err
}

// RecentEvents lists the newest limit events, newest first, and every
// endpoint's cursor, read together so that they agree.
func (s *Outbox) RecentEvents(ctx context.Context, limit int) ([]resolver.Event, []resolver.NotifyCursor, error) {
	events := []resolver.Event{}
	var cursors []resolver.NotifyCursor
	err := s.db.InTx(ctx, "recent notifications", func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `select `+eventColumns+` from outbox order by id desc limit $1`, limit)
		if err != nil {
			return err
		}
		events, err = pgx.AppendRows(events[:0], rows, func(r pgx.CollectableRow) (e resolver.Event, err error) {
			err = scanEvent(r, &e)
			return
		})
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `
			select endpoint, last_xid::text::bigint, last_id, attempts, next_attempt, last_error, coalesce(delivered_at, 'epoch')
			from notify_cursors order by endpoint`)
		if err != nil {
			return err
		}
		var c resolver.NotifyCursor
		_, err = pgx.ForEachRow(rows, []any{&c.Endpoint, &c.LastXID, &c.LastID, &c.Attempts, &c.NextAttempt, &c.LastError, &c.DeliveredAt}, func() error {
			if c.DeliveredAt.Unix() == 0 {
				c.DeliveredAt = time.Time{}
			}
			cursors = append(cursors, c)
			return nil
		})
		return err
	})
	return events, cursors, err
}

// ChannelEvent records a pin's or unpin's channel.changed event, unless the
// channel serves what it served before (a pin of the version it followed).
func ChannelEvent(ctx context.Context, tx pgx.Tx, c resolver.ChannelChange, from, to string) error {
	if from == to {
		return nil
	}
	return Add(ctx, tx, resolver.Event{Type: resolver.EventChannelChanged, Channel: c.Channel,
		Source: c.Source, From: from, To: to, Actor: c.Actor, Reason: c.Reason})
}

// LastServed is the "to" of each channel's newest channel.changed event:
// what was last announced as the channel's served version.
func (s *Outbox) LastServed(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	err := s.db.InTxOpts(ctx, "last announced versions", pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			select distinct on (channel) channel, to_version from outbox
			where type = 'dev.tidemark.channel.changed' and channel <> ''
			order by channel, id desc`)
		if err != nil {
			return err
		}
		var ch, to string
		_, err = pgx.ForEachRow(rows, []any{&ch, &to}, func() error {
			out[ch] = to
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
