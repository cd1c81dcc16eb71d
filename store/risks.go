package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store/outboxdb"
)

// PutRisk declares (or replaces) a known risk of r.Source, compiled by the
// caller, with an audit event (risk-add), a notification and a change
// notice in one transaction. Past catalog.MaxRisksPerSource a new name is
// refused (ErrConflict): every answer evaluates every risk of its source.
func (s *Store) PutRisk(ctx context.Context, r catalog.Risk, actor string) (catalog.Risk, error) {
	clusters := r.Clusters
	if clusters == nil {
		clusters = []string{}
	}
	err := s.inTx(ctx, fmt.Sprintf("declare risk %q of source %q", r.Name, r.Source), func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `select count(*) from risks where source = $1 and name <> $2`, r.Source, r.Name).Scan(&n); err != nil {
			return err
		}
		if n >= catalog.MaxRisksPerSource {
			return fmt.Errorf("%w: source %q already has %d risks, the most it may have; remove one first", resolver.ErrConflict, r.Source, n)
		}
		err := tx.QueryRow(ctx, `
			insert into risks (source, name, message, url, from_range, to_range, clusters, created_by)
			values ($1, $2, $3, $4, $5, $6, $7, $8)
			on conflict (source, name) do update set message = excluded.message, url = excluded.url,
				from_range = excluded.from_range, to_range = excluded.to_range, clusters = excluded.clusters,
				created_by = excluded.created_by, created_at = now()
			returning created_by, created_at`,
			r.Source, r.Name, r.Message, r.URL, r.From, r.To, clusters, actor).Scan(&r.CreatedBy, &r.CreatedAt)
		if err != nil {
			return err
		}
		reason := fmt.Sprintf("%s: %s -> %s: %s", r.Name, r.From, r.To, r.Message)
		if err := audit(ctx, tx, resolver.AuditEvent{Actor: actor, Action: "risk-add", Source: r.Source, To: r.Name, Reason: reason}); err != nil {
			return err
		}
		if err := outboxdb.Add(ctx, tx, resolver.Event{Type: resolver.EventRiskChanged, Source: r.Source, To: r.Name, Actor: actor, Reason: reason}); err != nil {
			return err
		}
		return s.notify(ctx, tx, "risk", r.Source, "risk", r.Name)
	})
	if err != nil {
		return catalog.Risk{}, err
	}
	return r, nil
}

// DeleteRisk removes a known risk, audited (risk-remove) and notified;
// ErrNotFound when source has no risk of that name.
func (s *Store) DeleteRisk(ctx context.Context, source, name, actor, reason string) error {
	return s.inTx(ctx, fmt.Sprintf("remove risk %q of source %q", name, source), func(tx pgx.Tx) error {
		res, err := tx.Exec(ctx, `delete from risks where source = $1 and name = $2`, source, name)
		if err != nil {
			return err
		}
		if res.RowsAffected() == 0 {
			return fmt.Errorf("%w: source %q has no risk %q", resolver.ErrNotFound, source, name)
		}
		if err := audit(ctx, tx, resolver.AuditEvent{Actor: actor, Action: "risk-remove", Source: source, From: name, Reason: reason}); err != nil {
			return err
		}
		if err := outboxdb.Add(ctx, tx, resolver.Event{Type: resolver.EventRiskChanged, Source: source, From: name, Actor: actor, Reason: reason}); err != nil {
			return err
		}
		return s.notify(ctx, tx, "risk", source, "risk", name)
	})
}

func (l *sourceLoad) queueRisks(b *pgx.Batch) {
	b.Queue(`
		select source, name, message, url, from_range, to_range, clusters, created_by, created_at
		from risks where source = any($1) order by source, name`, l.names).Query(func(rows pgx.Rows) error {
		var r catalog.Risk
		_, err := pgx.ForEachRow(rows, []any{&r.Source, &r.Name, &r.Message, &r.URL, &r.From, &r.To, &r.Clusters, &r.CreatedBy, &r.CreatedAt}, func() error {
			d := &l.data[l.byName[r.Source]]
			d.Risks = append(d.Risks, r)
			r = catalog.Risk{}
			return nil
		})
		return err
	})
}
