package indexdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store/internal/pg"
)

// tagColumns are a listed tag's columns (writeTag), as COPYed into the
// per-scan temp table and, after the source, into tags.
var tagColumns = []string{"tag", "valid", "error", "major", "minor", "patch", "pre",
	"pre_number", "prerelease", "build", "build_meta", "canonical", "stream"}

// ApplyScan writes one scan in one transaction: COPY the tags into a temp
// table, merge them (new tags, changed classifications, present), mark tags
// absent that a complete listing no longer has (never delete), insert the
// scan row, and NOTIFY. It returns the recorded scan with its counts.
//
// A complete listing whose fingerprint (fingerprint.go) equals the source's
// last complete listing's takes a fast path: it writes only the scan row and
// the source's listed_at, no tag row. Its NOTIFY payload carries
// "tags":"unchanged": tags and digests are as they were, only the scan
// records (last scan, last success) moved on. A present tag's last_seen is
// therefore greatest(tags.last_seen, sources.listed_at), which is what Load
// returns (see migrations/002_listing_fingerprint.sql).
//
// Complete listings are recorded in groups when they can be (listings.go):
// a first listing and an unchanged one share a transaction with those of
// other sources that arrive meanwhile.
//
// A failed scan (r.Err set) records its error and touches no tag. An
// incomplete one adds and refreshes the tags it saw but marks nothing absent,
// and never takes the fast path (nor lets the next listing take it).
// The source must have been recorded by SyncSources (else ErrNotFound).
func (s *Index) ApplyScan(ctx context.Context, r resolver.ScanResult) (catalog.Scan, error) {
	if r.Source == "" {
		return catalog.Scan{}, fmt.Errorf("%w: apply scan: empty source name", resolver.ErrInvalid)
	}
	now := time.Now()
	if r.Started.IsZero() {
		r.Started = now
	}
	if r.Finished.IsZero() {
		r.Finished = now
	}
	sc := catalog.Scan{
		Source: r.Source, Started: r.Started, Finished: r.Finished,
		Outcome: "ok", Requests: r.Requests,
	}
	var (
		tags []resolver.Tag
		fp   []byte
	)
	if r.Err != nil {
		sc.Outcome, sc.Error = "failed", pg.OneLine(r.Err.Error())
	} else {
		sc.Complete = r.Complete
		tags = scanTags(r.Tags)
		sc.TagsSeen = len(tags)
		fp = fingerprint(tags)
	}
	if r.Err == nil && sc.Complete {
		j := &listingJob{source: r.Source, seen: r.Finished, tags: tags, fp: fp, sc: sc}
		j.deadline, _ = ctx.Deadline()
		if recorded, err := s.recordInGroup(j); err != nil {
			return catalog.Scan{}, err
		} else if recorded {
			return j.sc, nil
		}
	}
	op := fmt.Sprintf("apply scan of source %q", r.Source)
	err := s.inTx(ctx, op, func(tx pgx.Tx) error {
		var unchanged bool
		if r.Err == nil {
			var err error
			unchanged, err = mergeTags(ctx, tx, r.Source, r.Finished, sc.Complete, tags, fp, &sc)
			if err != nil {
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
		if unchanged {
			return s.notify(ctx, tx, "scan", r.Source, "tags", "unchanged")
		}
		return s.notify(ctx, tx, "scan", r.Source)
	})
	if err != nil {
		return catalog.Scan{}, err
	}
	s.perCommit.Observe(1)
	return sc, nil
}

// mergeTags upserts the listing and, for a complete one, marks the rest
// absent; unchanged reports that the fast path was taken (nothing merged).
//
// The source row is locked FOR NO KEY UPDATE first: it serialises scans of
// one source (so the fingerprint compared is the one the tags match) and
// keeps the source from being removed, without blocking blocks' foreign
// keys (KEY SHARE).
func mergeTags(ctx context.Context, tx pgx.Tx, source string, seen time.Time, complete bool, tags []resolver.Tag, fp []byte, sc *catalog.Scan) (unchanged bool, err error) {
	var stored []byte
	err = tx.QueryRow(ctx, `select listing_fingerprint from sources where name = $1 for no key update`, source).Scan(&stored)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("%w: source %q: not recorded (SyncSources first)", resolver.ErrNotFound, source)
	}
	if err != nil {
		return false, err
	}
	if complete && stored != nil && bytes.Equal(stored, fp) {
		_, err := tx.Exec(ctx, `update sources set listed_at = greatest(listed_at, $2) where name = $1`, source, seen)
		return true, err
	}
	if complete && stored == nil {
		if first, err := firstListing(ctx, tx, source, seen, tags, fp, sc); first || err != nil {
			return false, err
		}
	}
	// tag is collated "C" as tags.tag is (migrations/016), so the joins
	// below compare under one collation and may use either key.
	_, err = tx.Exec(ctx, `
		create temp table scan_tags (
			tag text collate "C", valid boolean, error text, major int, minor int, patch int,
			pre text, pre_number int, prerelease text, build int, build_meta text, canonical text, stream text,
			primary key (tag)
		) on commit drop`)
	if err != nil {
		return false, err
	}
	_, err = pg.CopyRows(ctx, tx, "scan_tags", tagColumns, len(tags), func(i int, r *pg.Row) { writeTag(r, &tags[i]) })
	if err != nil {
		return false, err
	}
	// Only rows that differ are written: a complete listing moves listed_at
	// instead of every row's last_seen. A partial listing does not move
	// listed_at, so it refreshes last_seen of every tag it saw.
	// The NOT EXISTS drops unchanged rows before the upsert, which would
	// otherwise lock (and so dirty) every row it skips; the DO UPDATE WHERE
	// repeats the test for rows that changed under us.
	// xmax = 0 only on rows this statement inserted; that is the cheap,
	// documented-in-practice way to tell inserts from updates in one pass.
	unchangedFilter := ""
	if complete {
		// A separate statement text rather than "not $3 or not exists":
		// under an OR the planner cannot make the anti-join and probes
		// per row (seconds, not milliseconds, for 10,000 rows).
		unchangedFilter = `where not exists (
				select from tags p where p.source = $1 and p.tag = s.tag and p.present
				  and (p.valid, p.error, p.major, p.minor, p.patch, p.pre, p.pre_number,
					p.prerelease, p.build, p.build_meta, p.canonical, p.stream)
				  is not distinct from (s.valid, s.error, s.major, s.minor, s.patch, s.pre, s.pre_number,
					s.prerelease, s.build, s.build_meta, s.canonical, s.stream))`
	}
	err = tx.QueryRow(ctx, `
		with merged as (
			insert into tags as t (source, tag, valid, error, major, minor, patch, pre, pre_number,
				prerelease, build, build_meta, canonical, stream, first_seen, last_seen, present)
			select $1, tag, valid, error, major, minor, patch, pre, pre_number,
				prerelease, build, build_meta, canonical, stream, $2, $2, true
			from scan_tags s
			`+unchangedFilter+`
			on conflict (source, tag) do update set
				`+parsedFromExcluded+`
				last_seen = greatest(t.last_seen, excluded.last_seen), present = true
			where not $3 or (t.valid, t.error, t.major, t.minor, t.patch, t.pre, t.pre_number,
					t.prerelease, t.build, t.build_meta, t.canonical, t.stream, t.present)
				is distinct from (excluded.valid, excluded.error, excluded.major, excluded.minor,
					excluded.patch, excluded.pre, excluded.pre_number, excluded.prerelease,
					excluded.build, excluded.build_meta, excluded.canonical, excluded.stream, true)
			returning xmax = 0 as inserted
		)
		select count(*) filter (where inserted) from merged`, source, seen, complete).Scan(&sc.TagsNew)
	if err != nil {
		return false, err
	}
	if !complete {
		// The tags this listing added are in no fingerprint: the next
		// complete listing must merge, to mark them absent if need be.
		_, err := tx.Exec(ctx, `update sources set listing_fingerprint = null where name = $1`, source)
		return false, err
	}
	// A tag seen after this listing started (a push webhook indexed it
	// meanwhile, push.go) is newer than the listing: not gone.
	tag, err := tx.Exec(ctx, `
		update tags t set present = false
		where t.source = $1 and t.present and t.last_seen < $2
		  and not exists (select 1 from scan_tags s where s.tag = t.tag)`, source, sc.Started)
	if err != nil {
		return false, err
	}
	sc.TagsGone = int(tag.RowsAffected())
	// If a pushed tag was kept, the stored tags are not this listing: its
	// fingerprint must not let the next listing skip the merge.
	var kept bool
	err = tx.QueryRow(ctx, `select exists (select 1 from tags t where t.source = $1 and t.present
		and not exists (select 1 from scan_tags s where s.tag = t.tag))`, source).Scan(&kept)
	if err != nil {
		return false, err
	}
	if kept {
		fp = nil
	}
	_, err = tx.Exec(ctx, `update sources set listing_fingerprint = $2, listed_at = greatest(listed_at, $3) where name = $1`,
		source, fp, seen)
	return false, err
}

// firstListing writes the first complete listing of a source that has no
// tags: one COPY straight into tags, with nothing to compare or mark absent.
// A first index of many sources is mostly these; merging through a temp
// table and an anti-join made it 6x the floor (crane ls + COPY) at 1,000
// sources x 1,000 tags. It reports false, writing nothing, when the source
// has tags after all (a listing that was incomplete, or whose fingerprint
// was cleared).
func firstListing(ctx context.Context, tx pgx.Tx, source string, seen time.Time, tags []resolver.Tag, fp []byte, sc *catalog.Scan) (bool, error) {
	var has bool
	if err := tx.QueryRow(ctx, `select exists (select from tags where source = $1)`, source).Scan(&has); err != nil || has {
		return false, err
	}
	j := &listingJob{source: source, seen: seen, tags: tags}
	if err := copyFirstListings(ctx, tx, []*listingJob{j}); err != nil {
		return false, err
	}
	sc.TagsNew = j.sc.TagsNew
	_, err := tx.Exec(ctx, `update sources set listing_fingerprint = $2, listed_at = greatest(listed_at, $3) where name = $1`,
		source, fp, seen)
	return err == nil, err
}

// scanTags drops all but the last of duplicate names (a registry listing
// should have none; ON CONFLICT would refuse them), keeping the order.
func scanTags(tags []resolver.Tag) []resolver.Tag {
	idx := make(map[string]int, len(tags))
	out := make([]resolver.Tag, 0, len(tags))
	for _, t := range tags {
		if i, dup := idx[t.Name]; dup {
			out[i] = t
			continue
		}
		idx[t.Name] = len(out)
		out = append(out, t)
	}
	return out
}

// writeTag appends the tag's tagColumns to a COPY row. A version number
// that does not fit its int4 column is NULL there: the columns are for SQL
// readers, and a load parses the name again (migrations/001_schema.sql).
func writeTag(r *pg.Row, t *resolver.Tag) {
	r.Text(t.Name)
	r.Bool(t.Valid)
	if !t.Valid {
		r.Text(t.ParseError())
		for range len(tagColumns) - 3 {
			r.Null()
		}
		return
	}
	v := &t.Version
	r.Text("")
	r.Int4OrNull(v.Major)
	r.Int4OrNull(v.Minor)
	r.Int4OrNull(v.Patch)
	r.Text(v.Pre())
	r.Int4OrNull(v.PreNumber)
	r.Text(v.Prerelease())
	r.Int4OrNull(v.Build)
	r.Text(v.BuildMeta())
	r.Text(v.String())
	r.Text(t.Stream.String())
}

// tagArgs are the tag's tagColumns as query arguments, numbers past int4
// as NULL (writeTag).
func tagArgs(t resolver.Tag) []any {
	if !t.Valid {
		return []any{t.Name, false, t.ParseError(), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil}
	}
	v := t.Version
	return []any{t.Name, true, "", int4OrNil(v.Major), int4OrNil(v.Minor), int4OrNil(v.Patch), v.Pre(),
		int4OrNil(v.PreNumber), v.Prerelease(), int4OrNil(v.Build), v.BuildMeta(), v.String(), t.Stream.String()}
}

func int4OrNil(v int) any {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return nil
	}
	return v
}

// AddScanRequests adds n registry requests to the record of scan scanID: the
// ones made after ApplyScan wrote it (digest resolution), so that the record
// counts the whole scan. It sends no NOTIFY: the count changes no answer
// about versions, and the next reload shows it. ErrNotFound for an unknown
// scan, ErrInvalid for n < 0; n == 0 costs nothing.
func (s *Index) AddScanRequests(ctx context.Context, scanID int64, n int) error {
	if n < 0 {
		return fmt.Errorf("%w: add %d requests to scan %d: negative count", resolver.ErrInvalid, n, scanID)
	}
	if n == 0 {
		return nil
	}
	op := fmt.Sprintf("add requests to scan %d", scanID)
	return s.inTx(ctx, op, func(tx pgx.Tx) error {
		res, err := tx.Exec(ctx, `update scans set requests = requests + $2 where id = $1`, scanID, n)
		if err != nil {
			return err
		}
		if res.RowsAffected() == 0 {
			return fmt.Errorf("%w: scan %d", resolver.ErrNotFound, scanID)
		}
		return nil
	})
}

// FailScan marks recorded scan scanID failed with cause: a scan whose
// listing was recorded but which could not finish (its registry went down
// while digests were resolved). The tags it recorded stay. It NOTIFYs, so
// that the source's status shows it. ErrNotFound for an unknown scan.
func (s *Index) FailScan(ctx context.Context, scanID int64, cause error) error {
	if cause == nil {
		return fmt.Errorf("%w: fail scan %d: no cause", resolver.ErrInvalid, scanID)
	}
	op := fmt.Sprintf("fail scan %d", scanID)
	return s.inTx(ctx, op, func(tx pgx.Tx) error {
		var source string
		err := tx.QueryRow(ctx, `update scans set outcome = 'failed', error = $2
			where id = $1 returning source`, scanID, pg.OneLine(cause.Error())).Scan(&source)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: scan %d", resolver.ErrNotFound, scanID)
		}
		if err != nil {
			return err
		}
		return s.notify(ctx, tx, "scan", source)
	})
}

// parsedFromExcluded sets what parsing a tag gives from the row an upsert
// was refused for: a scan and a push both rewrite a known tag's parse.
const parsedFromExcluded = `valid = excluded.valid, error = excluded.error, major = excluded.major,
	minor = excluded.minor, patch = excluded.patch, pre = excluded.pre,
	pre_number = excluded.pre_number, prerelease = excluded.prerelease,
	build = excluded.build, build_meta = excluded.build_meta,
	canonical = excluded.canonical, stream = excluded.stream,`
