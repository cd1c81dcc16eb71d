package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store/outboxdb"
)

// Governance (CONTRACT section 15): scheduled and pending changes,
// approvals, freezes and holds. Every step is one transaction with its
// audit event and its notification.

const changeCols = `id, channel, action, version, reason, coalesce(at, 'epoch'), state, requested_by, created_at,
	approvals_needed, coalesce(expires_at, 'epoch'), force, rollback, coalesce(decided_at, 'epoch'), outcome,
	override_freeze, requester_identity`

func scanChange(row pgx.Row, c *resolver.ScheduledChange) error {
	err := row.Scan(&c.ID, &c.Channel, &c.Action, &c.Version, &c.Reason, &c.At, &c.State, &c.RequestedBy, &c.CreatedAt,
		&c.ApprovalsNeeded, &c.ExpiresAt, &c.Force, &c.Rollback, &c.DecidedAt, &c.Outcome, &c.Override, &c.RequesterIdentity)
	epoch := time.Unix(0, 0)
	for _, t := range []*time.Time{&c.At, &c.ExpiresAt, &c.DecidedAt} {
		if t.Equal(epoch) {
			*t = time.Time{}
		}
	}
	return err
}

func timeOrNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// changeEvent records step of change c in the audit (action) and the
// outbox (typ).
func changeEvent(ctx context.Context, tx pgx.Tx, c *resolver.ScheduledChange, action, typ, actor, reason string) error {
	text := fmt.Sprintf("change %d (%s %s)", c.ID, c.Action, c.Version)
	if reason != "" {
		text += ": " + reason
	}
	if action != "" {
		if err := audit(ctx, tx, resolver.AuditEvent{Actor: actor, Action: action, Channel: c.Channel, To: c.Version, Reason: text}); err != nil {
			return err
		}
	}
	return outboxdb.Add(ctx, tx, resolver.Event{Type: typ, Channel: c.Channel, To: c.Version, Actor: actor, Reason: text})
}

// ScheduleChange records c (State scheduled, or pending when it needs
// approvals) and answers it with its ID.
func (s *Store) ScheduleChange(ctx context.Context, c resolver.ScheduledChange) (resolver.ScheduledChange, error) {
	err := s.inTx(ctx, fmt.Sprintf("schedule a change of channel %q", c.Channel), func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
			insert into changes (channel, action, version, reason, at, state, requested_by, approvals_needed, expires_at, force, rollback,
				override_freeze, requester_identity)
			values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) returning id, created_at`,
			c.Channel, c.Action, c.Version, c.Reason, timeOrNull(c.At), c.State, c.RequestedBy, c.ApprovalsNeeded,
			timeOrNull(c.ExpiresAt), c.Force, c.Rollback, c.Override, c.RequesterIdentity).Scan(&c.ID, &c.CreatedAt)
		if err != nil {
			return err
		}
		action, typ, why := "change-schedule", resolver.EventChangeScheduled, "at "+c.At.UTC().Format(time.RFC3339)
		if c.State == resolver.ChangePending {
			action, typ, why = "change-request", resolver.EventChangePending, fmt.Sprintf("needs %d approvals", c.ApprovalsNeeded)
		}
		return changeEvent(ctx, tx, &c, action, typ, c.RequestedBy, strings.TrimSpace(why+" "+c.Reason))
	})
	return c, err
}

// Changes lists changes, newest first, in state (all when ""), at most
// limit.
func (s *Store) Changes(ctx context.Context, state string, limit int) ([]resolver.ScheduledChange, error) {
	out, err := s.queryChanges(ctx, "list changes", `where $1 = '' or state = $1 order by id desc limit $2`, state, limit)
	if out == nil {
		out = []resolver.ScheduledChange{}
	}
	return out, err
}

// Change reads one change with its approvals; ErrNotFound when none.
func (s *Store) Change(ctx context.Context, id int64) (resolver.ScheduledChange, error) {
	cs, err := s.queryChanges(ctx, fmt.Sprintf("read change %d", id), `where id = $1`, id)
	if err != nil {
		return resolver.ScheduledChange{}, err
	}
	if len(cs) == 0 {
		return resolver.ScheduledChange{}, fmt.Errorf("%w: no change %d", resolver.ErrNotFound, id)
	}
	return cs[0], nil
}

// queryChanges reads the changes where says, with their approvals.
func (s *Store) queryChanges(ctx context.Context, op, where string, args ...any) ([]resolver.ScheduledChange, error) {
	var out []resolver.ScheduledChange
	err := s.inTx(ctx, op, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `select `+changeCols+` from changes `+where, args...)
		if err != nil {
			return err
		}
		out, err = pgx.AppendRows(out[:0], rows, func(r pgx.CollectableRow) (c resolver.ScheduledChange, err error) {
			err = scanChange(r, &c)
			return
		})
		if err != nil {
			return err
		}
		return loadApprovals(ctx, tx, out)
	})
	return out, err
}

func loadApprovals(ctx context.Context, tx pgx.Tx, cs []resolver.ScheduledChange) error {
	if len(cs) == 0 {
		return nil
	}
	ids := make([]int64, len(cs))
	at := map[int64]int{}
	for i, c := range cs {
		ids[i], at[c.ID] = c.ID, i
	}
	rows, err := tx.Query(ctx, `select change_id, identity, actor, approve, at, reason from change_approvals where change_id = any($1) order by at`, ids)
	if err != nil {
		return err
	}
	var id int64
	var a resolver.Approval
	_, err = pgx.ForEachRow(rows, []any{&id, &a.Identity, &a.Actor, &a.Approve, &a.At, &a.Reason}, func() error {
		cs[at[id]].Approvals = append(cs[at[id]].Approvals, a)
		return nil
	})
	return err
}

// lockChange reads change id for update; ErrNotFound when there is none.
func lockChange(ctx context.Context, tx pgx.Tx, id int64) (resolver.ScheduledChange, error) {
	var c resolver.ScheduledChange
	err := scanChange(tx.QueryRow(ctx, `select `+changeCols+` from changes where id = $1 for update`, id), &c)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, fmt.Errorf("%w: no change %d", resolver.ErrNotFound, id)
	}
	if err != nil {
		return c, err
	}
	cs := []resolver.ScheduledChange{c}
	err = loadApprovals(ctx, tx, cs)
	return cs[0], err
}

func decide(ctx context.Context, tx pgx.Tx, c *resolver.ScheduledChange, state, outcome string) error {
	c.State, c.Outcome, c.DecidedAt = state, outcome, time.Now()
	_, err := tx.Exec(ctx, `update changes set state = $2, outcome = $3, decided_at = now() where id = $1`, c.ID, state, outcome)
	return err
}

// CancelChange cancels a scheduled or pending change; ErrState for one
// already decided.
func (s *Store) CancelChange(ctx context.Context, id int64, actor, reason string) (resolver.ScheduledChange, error) {
	var c resolver.ScheduledChange
	err := s.inTx(ctx, fmt.Sprintf("cancel change %d", id), func(tx pgx.Tx) error {
		var err error
		if c, err = lockChange(ctx, tx, id); err != nil {
			return err
		}
		if c.State != resolver.ChangeScheduled && c.State != resolver.ChangePending {
			return fmt.Errorf("%w: change %d is %s; only a scheduled or pending change can be cancelled", resolver.ErrState, id, c.State)
		}
		if err := decide(ctx, tx, &c, resolver.ChangeCancelled, "cancelled by "+actor); err != nil {
			return err
		}
		return changeEvent(ctx, tx, &c, "change-cancel", resolver.EventChangeCancelled, actor, reason)
	})
	return c, err
}

// othersMust says who may decide c instead of its requester.
func othersMust(c resolver.ScheduledChange) string {
	left := c.ApprovalsNeeded - len(c.Approvers())
	if left <= 1 {
		return "another identity must approve it"
	}
	return fmt.Sprintf("%d others must approve it", left)
}

// DecideChange records identity's approval (or rejection) of a pending
// change. The requester may not decide, nor one identity twice (ErrState).
// A rejection rejects the change; the last approval needed schedules it
// (at its time, or now).
func (s *Store) DecideChange(ctx context.Context, id int64, who resolver.Principal, approve bool, reason string) (resolver.ScheduledChange, error) {
	var c resolver.ScheduledChange
	identity, actor := who.ID(), who.Name
	err := s.inTx(ctx, fmt.Sprintf("decide change %d", id), func(tx pgx.Tx) error {
		var err error
		if c, err = lockChange(ctx, tx, id); err != nil {
			return err
		}
		requester := c.RequesterIdentity
		if requester == "" {
			requester = c.RequestedBy // recorded before identities were
		}
		switch {
		case c.State != resolver.ChangePending:
			return fmt.Errorf("%w: change %d is %s, not pending approval", resolver.ErrState, id, c.State)
		case identity == requester:
			return fmt.Errorf("%w: %s requested change %d and cannot approve or reject it: %s (tidemark approve %d with their own token)",
				resolver.ErrState, actor, id, othersMust(c), id)
		}
		for _, a := range c.Approvals {
			if a.Identity == identity {
				return fmt.Errorf("%w: %s already decided change %d (as %s)", resolver.ErrState, actor, id, cmp.Or(a.Actor, a.Identity))
			}
		}
		if _, err := tx.Exec(ctx, `insert into change_approvals (change_id, identity, actor, approve, reason) values ($1, $2, $3, $4, $5)`,
			id, identity, actor, approve, reason); err != nil {
			return err
		}
		c.Approvals = append(c.Approvals, resolver.Approval{Identity: identity, Actor: actor, Approve: approve, At: time.Now(), Reason: reason})
		if !approve {
			if err := decide(ctx, tx, &c, resolver.ChangeRejected, "rejected by "+actor); err != nil {
				return err
			}
			return changeEvent(ctx, tx, &c, "change-reject", resolver.EventChangeRejected, actor, reason)
		}
		if err := changeEvent(ctx, tx, &c, "change-approve", resolver.EventChangeApproved, actor, reason); err != nil {
			return err
		}
		if len(c.Approvers()) < c.ApprovalsNeeded {
			return nil
		}
		if c.At.IsZero() || c.At.Before(time.Now()) {
			c.At = time.Now()
		}
		c.State = resolver.ChangeScheduled
		_, err = tx.Exec(ctx, `update changes set state = 'scheduled', at = $2 where id = $1`, id, c.At)
		return err
	})
	return c, err
}

// DueChanges lists the scheduled changes whose time has come, oldest first.
func (s *Store) DueChanges(ctx context.Context, now time.Time) ([]resolver.ScheduledChange, error) {
	return s.queryChanges(ctx, "list due changes", `where state = 'scheduled' and at <= $1 order by at, id limit 100`, now)
}

// ApplyChange applies scheduled change id exactly once: in one
// transaction it claims the change (a replica that claimed it first wins;
// applied is then false), plans it against the current snapshot (plan's
// error fails the change, recorded and notified) and pins or unpins. The
// audit actor is the requester; the reason names the approvers.
func (s *Store) ApplyChange(ctx context.Context, id int64, plan func(resolver.ScheduledChange) (resolver.ChannelChange, error)) (c resolver.ScheduledChange, applied bool, err error) {
	err = s.inTx(ctx, fmt.Sprintf("apply change %d", id), func(tx pgx.Tx) error {
		var claimed int64
		err := tx.QueryRow(ctx, `select id from changes where id = $1 and state = 'scheduled' and at <= now() for update skip locked`, id).Scan(&claimed)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // applied, cancelled or claimed elsewhere
		}
		if err != nil {
			return err
		}
		if c, err = lockChange(ctx, tx, id); err != nil {
			return err
		}
		applied = true
		fail := func(cause error) error {
			if err := decide(ctx, tx, &c, resolver.ChangeFailed, cause.Error()); err != nil {
				return err
			}
			return changeEvent(ctx, tx, &c, "change-fail", resolver.EventChangeFailed, c.RequestedBy, cause.Error())
		}
		cc, perr := plan(c)
		if perr != nil {
			return fail(perr)
		}
		cc.Actor = c.RequestedBy
		if ap := c.Approvers(); len(ap) > 0 {
			cc.Reason = strings.TrimSpace(cc.Reason + " (approved by " + strings.Join(ap, ", ") + ")")
		}
		// The pin in a savepoint: a pin the database refuses (a block made
		// a moment ago) fails the change, recorded.
		sp, err := tx.Begin(ctx)
		if err != nil {
			return err
		}
		if c.Action == "unpin" {
			_, perr = s.unpinTx(ctx, sp, cc)
		} else {
			_, perr = s.pinTx(ctx, sp, cc)
		}
		if perr != nil {
			if err := sp.Rollback(ctx); err != nil {
				return err
			}
			if errors.Is(perr, resolver.ErrUnavailable) {
				return perr
			}
			return fail(perr)
		}
		if err := sp.Commit(ctx); err != nil {
			return err
		}
		if err := decide(ctx, tx, &c, resolver.ChangeDone, ""); err != nil {
			return err
		}
		return changeEvent(ctx, tx, &c, "", resolver.EventChangeApplied, c.RequestedBy, c.Reason)
	})
	return c, applied, err
}

// ExpireChanges fails the pending changes whose approvals did not come in
// time; it answers them.
func (s *Store) ExpireChanges(ctx context.Context, now time.Time) ([]resolver.ScheduledChange, error) {
	var out []resolver.ScheduledChange
	err := s.inTx(ctx, "expire pending changes", func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `select id from changes where state = 'pending' and expires_at <= $1 for update skip locked`, now)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		for _, id := range ids {
			c, err := lockChange(ctx, tx, id)
			if err != nil {
				return err
			}
			why := fmt.Sprintf("expired with %d of %d approvals", len(c.Approvers()), c.ApprovalsNeeded)
			if err := decide(ctx, tx, &c, resolver.ChangeFailed, why); err != nil {
				return err
			}
			if err := changeEvent(ctx, tx, &c, "change-fail", resolver.EventChangeFailed, "tidemark", why); err != nil {
				return err
			}
			out = append(out, c)
		}
		return nil
	})
	return out, err
}
