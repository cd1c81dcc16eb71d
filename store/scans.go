package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
)

// ScanResult is what one indexing run of one source found.
type ScanResult struct {
	Source   string
	Started  time.Time
	Finished time.Time
	// Complete is true when the whole tag list was read. Only a complete
	// listing marks missing tags absent; an incomplete one changes no tags.
	Complete bool
	Tags     []resolver.Tag // classified tags from the listing (excluded tags already dropped)
	Err      error          // non-nil: the scan failed; its text is recorded, tags are untouched
	Requests int            // registry requests made
}

// scanTagColumns are the columns COPYed into the per-scan temp table.
var scanTagColumns = []string{"tag", "valid", "error", "major", "minor", "patch", "pre",
	"pre_number", "prerelease", "build", "build_meta", "canonical", "stream"}

// ApplyScan writes one scan in one transaction: COPY the tags into a temp
// table, merge them (new tags, last_seen, present), mark tags absent that a
// complete listing no longer has (never delete), insert the scan row, and
// NOTIFY. It returns the recorded scan with its counts.
//
// A failed scan (r.Err set) records its error and touches no tag. An
// incomplete one adds and refreshes the tags it saw but marks nothing absent.
// The source must have been recorded by SyncSources (else ErrNotFound).
func (s *Store) ApplyScan(ctx context.Context, r ScanResult) (resolver.Scan, error) {
	if r.Source == "" {
		return resolver.Scan{}, fmt.Errorf("%w: apply scan: empty source name", resolver.ErrInvalid)
	}
	now := time.Now()
	if r.Started.IsZero() {
		r.Started = now
	}
	if r.Finished.IsZero() {
		r.Finished = now
	}
	sc := resolver.Scan{
		Source: r.Source, Started: r.Started, Finished: r.Finished,
		Outcome: "ok", Requests: r.Requests,
	}
	var rows [][]any
	if r.Err != nil {
		sc.Outcome, sc.Error = "failed", oneLine(r.Err.Error())
	} else {
		sc.Complete = r.Complete
		rows = scanRows(r.Tags)
		sc.TagsSeen = len(rows)
	}
	op := fmt.Sprintf("apply scan of source %q", r.Source)
	err := s.inTx(ctx, op, func(tx pgx.Tx) error {
		if r.Err == nil {
			if err := mergeTags(ctx, tx, r.Source, r.Finished, sc.Complete, rows, &sc); err != nil {
				return err
			}
		}
		err := tx.QueryRow(ctx, `
			insert into scans (source, started, finished, outcome, error, complete, tags_seen, tags_new, tags_gone, requests)
			values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) returning id`,
			sc.Source, sc.Started, sc.Finished, sc.Outcome, sc.Error, sc.Complete,
			sc.TagsSeen, sc.TagsNew, sc.TagsGone, sc.Requests).Scan(&sc.ID)
		if err != nil {
			return err
		}
		return notify(ctx, tx, payload("scan", r.Source))
	})
	if err != nil {
		return resolver.Scan{}, err
	}
	return sc, nil
}

// mergeTags upserts the listing and, for a complete one, marks the rest absent.
func mergeTags(ctx context.Context, tx pgx.Tx, source string, seen time.Time, complete bool, rows [][]any, sc *resolver.Scan) error {
	var known bool
	err := tx.QueryRow(ctx, `select exists (select from sources where name = $1 for key share)`, source).Scan(&known)
	if err != nil {
		return err
	}
	if !known {
		return fmt.Errorf("%w: source %q: not recorded (SyncSources first)", resolver.ErrNotFound, source)
	}
	_, err = tx.Exec(ctx, `
		create temp table scan_tags (
			tag text, valid boolean, error text, major int, minor int, patch int,
			pre text, pre_number int, prerelease text, build int, build_meta text, canonical text, stream text
		) on commit drop`)
	if err != nil {
		return err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"scan_tags"}, scanTagColumns, pgx.CopyFromRows(rows)); err != nil {
		return err
	}
	// xmax = 0 only on rows this statement inserted; that is the cheap,
	// documented-in-practice way to tell inserts from updates in one pass.
	// Rows whose fields did not change are still updated for last_seen.
	err = tx.QueryRow(ctx, `
		with merged as (
			insert into tags as t (source, tag, valid, error, major, minor, patch, pre, pre_number,
				prerelease, build, build_meta, canonical, stream, first_seen, last_seen, present)
			select $1, tag, valid, error, major, minor, patch, pre, pre_number,
				prerelease, build, build_meta, canonical, stream, $2, $2, true
			from scan_tags
			on conflict (source, tag) do update set
				valid = excluded.valid, error = excluded.error, major = excluded.major,
				minor = excluded.minor, patch = excluded.patch, pre = excluded.pre,
				pre_number = excluded.pre_number, prerelease = excluded.prerelease,
				build = excluded.build, build_meta = excluded.build_meta,
				canonical = excluded.canonical, stream = excluded.stream,
				last_seen = excluded.last_seen, present = true
			returning xmax = 0 as inserted
		)
		select count(*) filter (where inserted) from merged`, source, seen).Scan(&sc.TagsNew)
	if err != nil {
		return err
	}
	if !complete {
		return nil
	}
	tag, err := tx.Exec(ctx, `
		update tags t set present = false
		where t.source = $1 and t.present
		  and not exists (select 1 from scan_tags s where s.tag = t.tag)`, source)
	if err != nil {
		return err
	}
	sc.TagsGone = int(tag.RowsAffected())
	return nil
}

// scanRows turns tags into COPY rows, keeping the last of duplicate names
// (a registry listing should have none; ON CONFLICT would refuse them).
func scanRows(tags []resolver.Tag) [][]any {
	idx := make(map[string]int, len(tags))
	rows := make([][]any, 0, len(tags))
	for _, t := range tags {
		row := tagRow(t)
		if i, dup := idx[t.Name]; dup {
			rows[i] = row
			continue
		}
		idx[t.Name] = len(rows)
		rows = append(rows, row)
	}
	return rows
}

func tagRow(t resolver.Tag) []any {
	if !t.Valid {
		return []any{t.Name, false, t.Error, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil}
	}
	v := t.Version
	return []any{t.Name, true, "", v.Major, v.Minor, v.Patch, v.Pre, v.PreNumber,
		v.Prerelease, v.Build, v.BuildMeta, v.String(), t.Stream.String()}
}

// payload is a change notification's JSON: {"kind":"scan","source":"x"}.
// Listeners only need to know that something changed; the fields help logs.
func payload(kind, source string, kv ...string) string {
	m := map[string]string{"kind": kind}
	if source != "" {
		m["source"] = source
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}
