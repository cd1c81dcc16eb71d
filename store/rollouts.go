package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/store/outboxdb"
)

// rolloutCols are the columns scanRollout reads, in its order.
const rolloutCols = `id, channel, baseline, from_version, to_version, carried, steps, interval_ms,
	started_at, recorded_step, actor, reason`

func scanRollout(row pgx.Row) (resolver.Rollout, error) {
	var r resolver.Rollout
	var carried []byte
	var steps []int32
	var ms int64
	err := row.Scan(&r.ID, &r.Channel, &r.Baseline, &r.From, &r.To, &carried, &steps, &ms,
		&r.StartedAt, &r.RecordedStep, &r.Actor, &r.Reason)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(carried, &r.Carried); err != nil {
		return r, fmt.Errorf("rollout %d: carried: %w", r.ID, err)
	}
	r.Steps = make([]int, len(steps))
	for i, s := range steps {
		r.Steps[i] = int(s)
	}
	r.Interval = time.Duration(ms) * time.Millisecond
	return r, nil
}

// queueRollouts reads every channel's latest rollout into sl, then the
// events of those rollouts: the events' query names the same rollouts by
// a subquery, so the two need no round trip between them (the batch runs
// in one repeatable-read transaction, so both see the same rollouts).
func queueRollouts(b *pgx.Batch, sl *stateLoad) {
	b.Queue(`select distinct on (channel) ` + rolloutCols + ` from rollouts order by channel, id desc`).Query(func(rows pgx.Rows) error {
		latest, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (resolver.Rollout, error) { return scanRollout(r) })
		if err != nil {
			return err
		}
		sl.rollouts = latest
		sl.byID = make(map[int64]*resolver.Rollout, len(latest))
		for i := range latest {
			sl.byID[latest[i].ID] = &latest[i]
		}
		return nil
	})
	b.Queue(`select rollout_id, kind, at, actor, reason, rollback from rollout_events
		where rollout_id in (select distinct on (channel) id from rollouts order by channel, id desc)
		order by id`).Query(func(rows pgx.Rows) error {
		return scanRolloutEvents(rows, sl.byID)
	})
}

func loadRolloutEvents(ctx context.Context, tx pgx.Tx, ids []int64, byID map[int64]*resolver.Rollout) error {
	rows, err := tx.Query(ctx, `select rollout_id, kind, at, actor, reason, rollback from rollout_events
		where rollout_id = any($1) order by id`, ids)
	if err != nil {
		return err
	}
	return scanRolloutEvents(rows, byID)
}

// scanRolloutEvents appends each event row to its rollout in byID.
func scanRolloutEvents(rows pgx.Rows, byID map[int64]*resolver.Rollout) error {
	var id int64
	var e resolver.RolloutEvent
	_, err := pgx.ForEachRow(rows, []any{&id, &e.Kind, &e.At, &e.Actor, &e.Reason, &e.Rollback}, func() error {
		r := byID[id]
		r.Events = append(r.Events, e)
		return nil
	})
	return err
}

// latestRollout reads channel's latest rollout with its events; ok is
// false when it has none. The caller holds the channel's state row lock.
func latestRollout(ctx context.Context, tx pgx.Tx, channel string) (r resolver.Rollout, ok bool, err error) {
	r, err = scanRollout(tx.QueryRow(ctx, `select `+rolloutCols+` from rollouts where channel = $1 order by id desc limit 1`, channel))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, err
	}
	err = loadRolloutEvents(ctx, tx, []int64{r.ID}, map[int64]*resolver.Rollout{r.ID: &r})
	return r, err == nil, err
}

// latestRolloutPtr is latestRollout as a pointer, nil when none.
func latestRolloutPtr(ctx context.Context, tx pgx.Tx, channel string) (*resolver.Rollout, error) {
	r, ok, err := latestRollout(ctx, tx, channel)
	if err != nil || !ok {
		return nil, err
	}
	return &r, nil
}

// StartRollout records st: a rollout from the channel's latest one, or a
// baseline. started is false when there is nothing to do: the channel's
// latest rollout is not st.Prev any more (another replica recorded this
// change first) or already goes to st.To.
func (s *Store) StartRollout(ctx context.Context, st snapshot.RolloutStart) (started bool, err error) {
	err = s.inTx(ctx, fmt.Sprintf("start rollout of channel %q", st.Channel), func(tx pgx.Tx) error {
		if _, err := lockState(ctx, tx, st.Channel, resolver.AnyRevision); err != nil {
			return err
		}
		prev, err := latestRolloutPtr(ctx, tx, st.Channel)
		if err != nil {
			return err
		}
		var prevID int64
		if prev != nil {
			prevID = prev.ID
		}
		if prevID != st.Prev || prev != nil && prev.To == st.To {
			return nil
		}
		if started, err = startRollout(ctx, tx, prev, st); err != nil || !started {
			return err
		}
		return s.notify(ctx, tx, "rollout", "", "channel", st.Channel)
	})
	return started, err
}

// startRollout inserts the rollout st begins after prev, at the database's
// clock (every replica reads the same start), and audits its start.
func startRollout(ctx context.Context, tx pgx.Tx, prev *resolver.Rollout, st snapshot.RolloutStart) (bool, error) {
	if prev != nil && prev.To == st.To {
		return false, nil
	}
	var now time.Time
	if err := tx.QueryRow(ctx, `select clock_timestamp()`).Scan(&now); err != nil {
		return false, err
	}
	r := st.Begin(prev, now)
	carried, err := json.Marshal(r.Carried)
	if err != nil {
		return false, err
	}
	if r.Carried == nil {
		carried = []byte("[]")
	}
	var prevID *int64
	if prev != nil {
		prevID = &prev.ID
	}
	recorded := 0
	if r.Baseline {
		recorded = len(r.Steps) - 1
	}
	_, err = tx.Exec(ctx, `insert into rollouts (channel, prev_id, baseline, from_version, to_version, carried,
			steps, interval_ms, started_at, recorded_step, actor, reason)
		values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		r.Channel, prevID, r.Baseline, r.From, r.To, carried, r.Steps, r.Interval.Milliseconds(), now, recorded, r.Actor, r.Reason)
	if err != nil || r.Baseline {
		return err == nil, err
	}
	// The history names what the channel served before, even when it was
	// not servable any more (a block started this rollout).
	return true, rolloutAudit(ctx, tx, resolver.AuditEvent{Actor: r.Actor, Action: "rollout-start", Channel: r.Channel,
		From: cmp.Or(r.Replaced, r.From), To: r.To, Reason: fmt.Sprintf("%s (steps %v every %s)", r.Reason, r.Steps, r.Interval)})
}

// rolloutAudit records a rollout event in the channel's history and, in
// the same transaction, in the notification outbox as
// dev.tidemark.rollout.changed (its reason says which event).
func rolloutAudit(ctx context.Context, tx pgx.Tx, e resolver.AuditEvent) error {
	if err := audit(ctx, tx, e); err != nil {
		return err
	}
	reason := e.Action
	if e.Reason != "" {
		reason += ": " + e.Reason
	}
	return outboxdb.Add(ctx, tx, resolver.Event{Type: resolver.EventRolloutChanged, Channel: e.Channel,
		From: e.From, To: e.To, Actor: e.Actor, Reason: reason})
}

// RolloutControl pauses, resumes, advances or halts channel's rollout:
// ErrNotFound when it never rolled out, ErrConflict when the rollout's
// state does not allow it (checked at the database's clock, under the
// channel's lock, so racing controls have one outcome).
func (s *Store) RolloutControl(ctx context.Context, channel, kind, actor, reason string) (resolver.Rollout, error) {
	return s.rolloutControl(ctx, channel, kind, actor, reason, false)
}

// RolloutRollback halts channel's rollout as a rollback: clusters that
// already run its version are sent back to its from too (a plain halt
// keeps them where they are). Audited as rollout-halt with the reason.
func (s *Store) RolloutRollback(ctx context.Context, channel, actor, reason string) (resolver.Rollout, error) {
	return s.rolloutControl(ctx, channel, resolver.RolloutHalt, actor, reason, true)
}

func (s *Store) rolloutControl(ctx context.Context, channel, kind, actor, reason string, rollback bool) (resolver.Rollout, error) {
	var r resolver.Rollout
	err := s.inTx(ctx, fmt.Sprintf("%s rollout of channel %q", kind, channel), func(tx pgx.Tx) error {
		if _, err := lockState(ctx, tx, channel, resolver.AnyRevision); err != nil {
			return err
		}
		prev, ok, err := latestRollout(ctx, tx, channel)
		if err != nil {
			return err
		}
		if !ok || prev.Baseline {
			return fmt.Errorf("%w: channel %q has never rolled out", resolver.ErrNotFound, channel)
		}
		r = prev
		var now time.Time
		if err := tx.QueryRow(ctx, `select clock_timestamp()`).Scan(&now); err != nil {
			return err
		}
		if err := r.Control(kind, now); err != nil {
			return err
		}
		ev := resolver.RolloutEvent{Kind: kind, At: now, Actor: actor, Reason: reason, Rollback: rollback}
		if _, err := tx.Exec(ctx, `insert into rollout_events (rollout_id, at, kind, actor, reason, rollback) values ($1, $2, $3, $4, $5, $6)`,
			r.ID, ev.At, ev.Kind, ev.Actor, ev.Reason, ev.Rollback); err != nil {
			return err
		}
		r.Events = append(r.Events, ev)
		if err := rolloutAudit(ctx, tx, resolver.AuditEvent{Actor: actor, Action: "rollout-" + kind, Channel: channel, From: r.From, To: r.To, Reason: reason}); err != nil {
			return err
		}
		return s.notify(ctx, tx, "rollout", "", "channel", channel)
	})
	return r, err
}

// RecordRolloutStep audits that rollout id has reached step (an index into
// its steps; the last one completes it): one rollout-step per step passed
// since the last recorded, then rollout-complete. Progress never depends
// on it; it is the history's account, written by the indexing leader, and
// guarded so that two leaders in a row never write it twice.
func (s *Store) RecordRolloutStep(ctx context.Context, r resolver.Rollout, step int) (bool, error) {
	recorded := false
	err := s.inTx(ctx, fmt.Sprintf("record step of rollout %d", r.ID), func(tx pgx.Tx) error {
		var from int
		if err := tx.QueryRow(ctx, `select recorded_step from rollouts where id = $1 for update`, r.ID).Scan(&from); err != nil {
			return err
		}
		if from >= step {
			return nil
		}
		if _, err := tx.Exec(ctx, `update rollouts set recorded_step = $2 where id = $1`, r.ID, step); err != nil {
			return err
		}
		last := len(r.Steps) - 1
		for k := from + 1; k <= step && k <= last; k++ {
			ev := resolver.AuditEvent{Actor: "tidemark", Action: "rollout-step", Channel: r.Channel, From: r.From, To: r.To,
				Reason: fmt.Sprintf("step %d of %d: %d%% of clusters", k+1, len(r.Steps), r.Steps[k])}
			if k == last {
				ev.Action, ev.Reason = "rollout-complete", "every cluster gets "+r.To
			}
			if err := rolloutAudit(ctx, tx, ev); err != nil {
				return err
			}
		}
		recorded = true
		return nil
	})
	return recorded, err
}

// RolloutClusters counts channel's recorded clusters last served to and
// from (the fleet's served version), from the counts kept as the fleet is
// written (fleet_versions, migration 008).
func (s *Store) RolloutClusters(ctx context.Context, channel, from, to string) (onTo, onFrom int, err error) {
	err = s.inTxOpts(ctx, fmt.Sprintf("rollout clusters of channel %q", channel), pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `select coalesce(sum(clusters) filter (where version = $2), 0)::bigint,
				coalesce(sum(clusters) filter (where version = $3), 0)::bigint
			from fleet_versions where channel = $1 and kind = 'served' and version in ($2, $3)`, channel, to, from).Scan(&onTo, &onFrom)
	})
	return onTo, onFrom, err
}
