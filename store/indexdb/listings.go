package indexdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store/internal/pg"
)

// Complete listings are recorded in groups: every listing that arrives
// while one group's transaction runs waits for the next, which records
// them together (group commit). A group takes the two common cases, both
// without comparing a tag: a source's first listing (its rows COPYed
// straight into tags) and a listing whose fingerprint is unchanged (the
// scan row and listed_at). Any other listing, and every listing of a
// group whose transaction failed, is then recorded alone by ApplyScan's
// own transaction, so that one bad listing fails only itself. A group that
// cannot reach the database fails its listings with that error instead:
// each alone would only wait for it again.
//
// At a first index of 1,000 sources x 1,000 tags, 16 listings at once,
// a COPY a source cost Postgres twice the CPU per row of a COPY of ten
// sources: it made and dropped its 1,000 insert slots each time. Each
// group is also one commit, so the replicas' reloads take it in one.
const (
	maxGroupSources = 64
	maxGroupTags    = 50_000          // a larger listing goes alone in its group
	groupTimeout    = 2 * time.Minute // the group's transaction, unless a listing's context ends sooner
)

// listingJob is one complete listing waiting for its group.
type listingJob struct {
	source string
	seen   time.Time
	tags   []resolver.Tag // free of duplicate names
	fp     []byte
	sc     catalog.Scan // filled in (ID, TagsNew) when recorded
	// deadline is the caller's, if any: the group's transaction ends by
	// the earliest of its listings'.
	deadline time.Time

	recorded bool  // by its group; else ApplyScan records it alone
	err      error // the database could not be reached: the listing's error
	done     chan struct{}
}

// listingGroups queues listings for the goroutine that records them, which
// runs while any wait.
type listingGroups struct {
	mu      sync.Mutex
	pending []*listingJob
	running bool
}

// recordInGroup waits for j's group and reports whether it recorded j, or
// the error that ends j's recording (the database is unavailable).
func (s *Index) recordInGroup(j *listingJob) (bool, error) {
	j.done = make(chan struct{})
	g := &s.groups
	g.mu.Lock()
	g.pending = append(g.pending, j)
	if !g.running {
		g.running = true
		go s.recordGroups()
	}
	g.mu.Unlock()
	<-j.done
	return j.recorded, j.err
}

func (s *Index) recordGroups() {
	for {
		group := s.groups.next()
		if group == nil {
			return
		}
		s.recordGroup(group)
		for _, j := range group {
			close(j.done)
		}
	}
}

// next takes the next group off the queue, in arrival order: one listing a
// source, up to maxGroupSources and maxGroupTags (at least one listing).
// It returns nil, and marks the goroutine stopped, when none waits.
func (g *listingGroups) next() []*listingJob {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pending) == 0 {
		g.running = false
		return nil
	}
	var group, rest []*listingJob
	in := map[string]bool{}
	tags := 0
	for _, j := range g.pending {
		full := len(group) == maxGroupSources || tags+len(j.tags) > maxGroupTags
		if in[j.source] || (len(group) > 0 && full) {
			rest = append(rest, j)
			continue
		}
		in[j.source] = true
		tags += len(j.tags)
		group = append(group, j)
	}
	g.pending = rest
	return group
}

// recordGroup records the first and unchanged listings of group in one
// transaction; it leaves the others unrecorded, and all of them when the
// transaction fails (with the error when the database is unavailable).
func (s *Index) recordGroup(group []*listingJob) {
	deadline := time.Now().Add(groupTimeout)
	names := make([]string, len(group))
	bySource := make(map[string]*listingJob, len(group))
	for i, j := range group {
		names[i], bySource[j.source] = j.source, j
		if !j.deadline.IsZero() && j.deadline.Before(deadline) {
			deadline = j.deadline
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	op := fmt.Sprintf("apply scan of source %q", group[0].source)
	if len(group) > 1 {
		op = fmt.Sprintf("apply scans of %d sources (%q and others)", len(group), group[0].source)
	}
	var (
		recorded []*listingJob
		stmtErr  error // a statement's own error, before inTx words it
	)
	err := s.inTx(ctx, op, func(tx pgx.Tx) (err error) {
		defer func() { stmtErr = err }()
		var firsts []*listingJob
		unchanged := map[string]bool{}
		// Locked in name order, as one source at a time is elsewhere: no
		// deadlock with a scan or push of one of them (mergeTags).
		rows, err := tx.Query(ctx, `
			select s.name, s.listing_fingerprint, exists (select from tags t where t.source = s.name)
			from sources s where s.name = any($1) order by s.name for no key update of s`, names)
		if err != nil {
			return err
		}
		var (
			name   string
			stored []byte
			has    bool
		)
		_, err = pgx.ForEachRow(rows, []any{&name, &stored, &has}, func() error {
			j := bySource[name]
			switch {
			case stored == nil && !has:
				firsts = append(firsts, j)
			case stored != nil && bytes.Equal(stored, j.fp):
				unchanged[name] = true
			default:
				return nil // merged alone (mergeTags)
			}
			recorded = append(recorded, j)
			return nil
		})
		if err != nil || len(recorded) == 0 {
			return err
		}
		if err := copyFirstListings(ctx, tx, firsts); err != nil {
			return err
		}
		if err := recordGroupScans(ctx, tx, recorded); err != nil {
			return err
		}
		for _, j := range recorded {
			if unchanged[j.source] {
				err = s.notify(ctx, tx, "scan", j.source, "tags", "unchanged")
			} else {
				err = s.notify(ctx, tx, "scan", j.source)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	// Only a database out of reach fails the listings; a group aborted by
	// a deadlock (another transaction locking sources in another order,
	// SyncSources) leaves them to be recorded alone, as a bad listing does.
	unreachable := stmtErr == nil || pg.ConnLost(stmtErr) || errors.Is(stmtErr, context.DeadlineExceeded)
	if errors.Is(err, resolver.ErrUnavailable) && unreachable {
		for _, j := range group {
			j.err = err
		}
	}
	if err != nil {
		return
	}
	for _, j := range recorded {
		j.recorded = true
	}
	if len(recorded) > 0 {
		s.perCommit.Observe(float64(len(recorded)))
	}
}

// copyFirstListings writes the tags of sources that have none in one COPY
// (a group's first listings, or one recorded alone: firstListing).
func copyFirstListings(ctx context.Context, tx pgx.Tx, firsts []*listingJob) error {
	total := 0
	for _, j := range firsts {
		total += len(j.tags)
	}
	if total == 0 {
		return nil
	}
	cols := append(append([]string{"source"}, tagColumns...), "first_seen", "last_seen", "present")
	job, start := 0, 0 // the job row i belongs to, and that job's first row
	_, err := pg.CopyRows(ctx, tx, "tags", cols, total, func(i int, r *pg.Row) {
		for i-start == len(firsts[job].tags) {
			start += len(firsts[job].tags)
			job++
		}
		j := firsts[job]
		r.Text(j.source)
		writeTag(r, &j.tags[i-start])
		r.Timestamptz(j.seen)
		r.Timestamptz(j.seen)
		r.Bool(true)
	})
	if err != nil {
		return err
	}
	for _, j := range firsts {
		j.sc.TagsNew = len(j.tags)
	}
	return nil
}

// recordGroupScans moves each source's fingerprint and listed_at and
// inserts its scan row (the ID into sc).
func recordGroupScans(ctx context.Context, tx pgx.Tx, recorded []*listingJob) error {
	n := len(recorded)
	var (
		names          = make([]string, n)
		fps            = make([][]byte, n)
		started, ended = make([]time.Time, n), make([]time.Time, n)
		seen, added    = make([]int32, n), make([]int32, n)
		requests       = make([]int32, n)
	)
	for i, j := range recorded {
		names[i], fps[i], started[i], ended[i] = j.source, j.fp, j.sc.Started, j.sc.Finished
		seen[i], added[i], requests[i] = int32(j.sc.TagsSeen), int32(j.sc.TagsNew), int32(j.sc.Requests)
	}
	_, err := tx.Exec(ctx, `
		update sources s set listing_fingerprint = u.fp, listed_at = greatest(s.listed_at, u.at)
		from unnest($1::text[], $2::bytea[], $3::timestamptz[]) as u (name, fp, at)
		where s.name = u.name`, names, fps, ended)
	if err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `
		insert into scans (source, started, finished, outcome, complete, tags_seen, tags_new, requests)
		select source, started, finished, 'ok', true, seen, added, requests
		from unnest($1::text[], $2::timestamptz[], $3::timestamptz[], $4::int[], $5::int[], $6::int[])
			as u (source, started, finished, seen, added, requests)
		returning source, id`, names, started, ended, seen, added, requests)
	if err != nil {
		return err
	}
	ids := make(map[string]int64, n)
	var (
		name string
		id   int64
	)
	if _, err := pgx.ForEachRow(rows, []any{&name, &id}, func() error { ids[name] = id; return nil }); err != nil {
		return err
	}
	for _, j := range recorded {
		j.sc.ID = ids[j.source]
	}
	return nil
}
