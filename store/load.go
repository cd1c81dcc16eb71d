package store

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// Load reads everything the server needs to answer, in one pass: present tags
// per source, blocks, last scans, and channel state (keyed by channel name).
//
// It runs in one read-only REPEATABLE READ transaction so the pieces agree
// with each other. Tags come back classified by the source's own Parser
// (re-parsing the stored name): the resolver stays the single authority on
// what a version is, and a changed parser takes effect without a rescan.
// Sources not in sources are not read; a source never scanned has no tags.
func (s *Store) Load(ctx context.Context, sources []catalog.Source) ([]catalog.SourceData, map[string]catalog.ChannelState, error) {
	var l *sourceLoad
	var sl *stateLoad
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err := s.db.ReadBatch(ctx, "load", opts, func(b *pgx.Batch) {
		l, sl = newSourceLoad(sources), newStateLoad() // again on a retry: callbacks append
		l.queue(b)
		sl.queue(b)
	})
	if err != nil {
		return nil, nil, err
	}
	return l.data, sl.done(), nil
}

// LoadSources reads what Load reads for sources alone (tags, blocks, last
// scans, risks), in one consistent transaction: a reload after one source
// changed reads that source, not the world. The transaction's BEGIN and
// its queries go in one round trip: on two busy cores each round trip was
// a wait for a turn on a CPU, both for Postgres and for the replica.
func (s *Store) LoadSources(ctx context.Context, sources []catalog.Source) ([]catalog.SourceData, error) {
	var l *sourceLoad
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err := s.db.ReadBatch(ctx, "load sources", opts, func(b *pgx.Batch) {
		l = newSourceLoad(sources) // again on a retry: callbacks append
		l.queue(b)
	})
	if err != nil {
		return nil, err
	}
	return l.data, nil
}

// LoadStates reads every channel's database state (pins, revisions,
// holds, rollouts) in one round trip, as LoadSources reads sources.
func (s *Store) LoadStates(ctx context.Context) (map[string]catalog.ChannelState, error) {
	// One snapshot of the database for every statement: under read
	// committed a pin landing between the channel_state and the rollouts
	// queries gave a state with the old pin and the new rollout, and the
	// leader then "rolled out" the old pin again.
	var sl *stateLoad
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err := s.db.ReadBatch(ctx, "load channel states", opts, func(b *pgx.Batch) {
		sl = newStateLoad()
		sl.queue(b)
	})
	if err != nil {
		return nil, err
	}
	return sl.done(), nil
}

// sourceLoad is the reading of some sources' data: one SourceData per
// source, filled by the queries queue adds to a batch, whose callbacks run
// in the order queued.
type sourceLoad struct {
	names  []string
	byName map[string]int
	data   []catalog.SourceData
	gates  []map[string]*resolver.GateChecks // by index in names, then tag
	listed []time.Time                       // sources.listed_at, by index in names
}

func newSourceLoad(sources []catalog.Source) *sourceLoad {
	l := &sourceLoad{
		names:  make([]string, len(sources)),
		byName: make(map[string]int, len(sources)),
		data:   make([]catalog.SourceData, len(sources)),
		gates:  make([]map[string]*resolver.GateChecks, len(sources)),
		listed: make([]time.Time, len(sources)),
	}
	for i, src := range sources {
		l.data[i].Source = src
		l.byName[src.Name] = i
		l.names[i] = src.Name
	}
	return l
}

// queue adds the queries that read the sources' tags, blocks, last scans
// and risks. Scans come first (their counts size the tag slices), gate
// checks and listed_at before the tags that use them.
func (l *sourceLoad) queue(b *pgx.Batch) {
	l.queueScans(b)
	l.queueBlocks(b)
	l.queueRisks(b)
	l.queueGateChecks(b)
	l.queueTags(b)
}

// queueTags reads the present tags of the sources, names[i] into data[i].
func (l *sourceLoad) queueTags(b *pgx.Batch) {
	// A present tag was in the source's last complete listing (or seen later
	// by a partial one), which a no-change rescan records only as listed_at:
	// its last_seen is the later of the two.
	b.Queue(`select name, listed_at from sources where name = any($1) and listed_at is not null`, l.names).Query(func(rows pgx.Rows) error {
		var (
			// The source's name is read where the driver holds it (valid
			// until the next row) and looked up without a copy: a million
			// of them were half a load's allocations.
			src pgtype.DriverBytes
			at  time.Time
		)
		_, err := pgx.ForEachRow(rows, []any{&src, &at}, func() error { l.listed[l.byName[string(src)]] = at; return nil })
		return err
	})
	// source = any($1) rather than a join with the names: the plan must be
	// the primary key's index scan even while tags' statistics lag behind
	// a first index, when a join was planned as a scan of the whole table.
	b.Queue(`
		select source, tag, digest, previous_digest, first_seen, last_seen
		from tags where present and source = any($1)`, l.names).Query(func(rows pgx.Rows) error {
		// Each slice is allocated once at about its size: a source's
		// present tags are its last listing's, give or take the tags pushes
		// added since. (Counting them first cost a third of the load once
		// tags had no index of present tags, migrations/009.) The scans
		// were read by now: callbacks run in the order queued.
		for i := range l.data {
			n := 0
			for _, sc := range []*catalog.Scan{l.data[i].LastScan, l.data[i].LastOK} {
				if sc != nil {
					n = max(n, sc.TagsSeen)
				}
			}
			if n > 0 {
				l.data[i].Tags = make([]resolver.Tag, 0, n+n/16)
			}
		}
		var (
			src               pgtype.DriverBytes
			tag, digest, prev string
			first, last       time.Time
		)
		_, err := pgx.ForEachRow(rows, []any{&src, &tag, &digest, &prev, &first, &last}, func() error {
			i := l.byName[string(src)]
			d := &l.data[i]
			t := classify(&d.Source, tag)
			t.Digest, t.Present = resolver.ParseDigest(digest), true
			t.SetPreviousDigest(prev)
			if last.Before(l.listed[i]) {
				last = l.listed[i]
			}
			t.FirstSeen, t.LastSeen = resolver.InstantOf(first), resolver.InstantOf(last)
			if g := l.gates[i]; g != nil {
				t.Gates = g[tag]
			}
			d.Tags = append(d.Tags, t)
			return nil
		})
		return err
	})
}

// queueGateChecks reads the stored gate checks of the sources (into gates,
// by index in names, then tag; nil for a source without any). Apart from
// the tags: few sources check gates, and a left join gave every tag seven
// more columns.
func (l *sourceLoad) queueGateChecks(b *pgx.Batch) {
	b.Queue(`select g.source, g.tag, `+gateColumns+` from gate_checks g where g.source = any($1)`, l.names).Query(func(rows pgx.Rows) error {
		var (
			src pgtype.DriverBytes
			tag string
			gc  gateScan
		)
		_, err := pgx.ForEachRow(rows, append([]any{&src, &tag}, gc.dest()...), func() error {
			c := gc.checks()
			if c == nil {
				return nil
			}
			i := l.byName[string(src)]
			if l.gates[i] == nil {
				l.gates[i] = map[string]*resolver.GateChecks{}
			}
			l.gates[i][tag] = c
			return nil
		})
		return err
	})
}

// classify tolerates a source without a parser (a test or a half-built
// config) instead of panicking in the middle of a load.
func classify(src *catalog.Source, tag string) resolver.Tag {
	if src.Parser == nil {
		return resolver.InvalidTag(tag, "source has no version scheme")
	}
	if strings.HasPrefix(tag, `"`) {
		// No registry tag starts with a quote: the indexer stores a name
		// Postgres cannot hold (a NUL byte, bytes not UTF-8) Go-quoted.
		return resolver.InvalidTag(tag, "tag holds a NUL byte or bytes that are not UTF-8; shown quoted")
	}
	return src.Classify(tag)
}

func (l *sourceLoad) queueBlocks(b *pgx.Batch) {
	b.Queue(`
		select source, version, reason, blocked_by, blocked_at from blocks
		where source = any($1) order by source, version`, l.names).Query(func(rows pgx.Rows) error {
		var bl catalog.Block
		_, err := pgx.ForEachRow(rows, []any{&bl.Source, &bl.Version, &bl.Reason, &bl.BlockedBy, &bl.BlockedAt}, func() error {
			d := &l.data[l.byName[bl.Source]]
			d.Blocks = append(d.Blocks, bl)
			return nil
		})
		return err
	})
}

// queueScans reads each source's newest scan and newest successful scan.
func (l *sourceLoad) queueScans(b *pgx.Batch) {
	b.Queue(`
		select k.last, c.id, c.source, c.started, coalesce(c.finished, 'epoch'), c.outcome, c.error,
			c.complete, c.tags_seen, c.tags_new, c.tags_gone, c.requests
		from unnest($1::text[]) as s(name)
		cross join (values (false), (true)) as k(last)
		cross join lateral (
			select * from scans
			where source = s.name and (k.last or outcome = 'ok')
			order by id desc limit 1
		) c`, l.names).Query(func(rows pgx.Rows) error {
		var (
			last bool
			sc   catalog.Scan
		)
		_, err := pgx.ForEachRow(rows, []any{&last, &sc.ID, &sc.Source, &sc.Started, &sc.Finished, &sc.Outcome,
			&sc.Error, &sc.Complete, &sc.TagsSeen, &sc.TagsNew, &sc.TagsGone, &sc.Requests}, func() error {
			c := sc
			if c.Finished.Equal(time.Unix(0, 0)) {
				c.Finished = time.Time{}
			}
			d := &l.data[l.byName[c.Source]]
			if last {
				d.LastScan = &c
			} else {
				d.LastOK = &c
			}
			return nil
		})
		return err
	})
}

// stateLoad is the reading of every channel's state: pins and revisions
// (channel_state), holds, and each channel's latest rollout with its
// events, queued in one batch whose callbacks run in the order queued.
type stateLoad struct {
	states   map[string]catalog.ChannelState
	rollouts []resolver.Rollout
	byID     map[int64]*resolver.Rollout
}

func newStateLoad() *stateLoad {
	return &stateLoad{states: make(map[string]catalog.ChannelState)}
}

func (sl *stateLoad) queue(b *pgx.Batch) {
	b.Queue(`select channel, ` + stateCols + ` from channel_state`).Query(func(rows pgx.Rows) error {
		var (
			name string
			st   catalog.ChannelState
		)
		_, err := pgx.ForEachRow(rows, []any{&name, &st.Pin, &st.PinDigest, &st.PinnedBy, &st.PinnedAt, &st.Revision, &st.UpdatedAt, &st.Rollback}, func() error {
			sl.states[name] = normState(st)
			return nil
		})
		return err
	})
	queueHolds(b, sl.states)
	queueRollouts(b, sl)
}

// done attaches each channel's latest rollout to its state (a channel
// with a rollout but never pinned gets a state too) and returns the states.
func (sl *stateLoad) done() map[string]catalog.ChannelState {
	for i := range sl.rollouts {
		r := &sl.rollouts[i]
		st := sl.states[r.Channel]
		st.Rollout = r
		sl.states[r.Channel] = st
	}
	return sl.states
}

// stateCols are a channel_state row as normState reads it. A row is
// created by the first write that locks the channel, which may be a
// rollout's baseline or control rather than a pin: updated_at is the last
// pin or unpin, so it counts only once the revision has moved (only a pin
// or an unpin moves it), and reads as never before.
const stateCols = `pin, pin_digest, pinned_by, coalesce(pinned_at, 'epoch'), revision,
	case when revision > 0 then updated_at else 'epoch' end, rollback`

// normState turns the epoch placeholders for "never" back into zero times.
func normState(st catalog.ChannelState) catalog.ChannelState {
	epoch := time.Unix(0, 0)
	if st.PinnedAt.Equal(epoch) {
		st.PinnedAt = time.Time{}
	}
	if st.UpdatedAt.Equal(epoch) {
		st.UpdatedAt = time.Time{}
	}
	return st
}
