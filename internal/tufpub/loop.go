package tufpub

import (
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/signed"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// AnswersOf is every channel's target content in snap at now: what it
// answers a request with no cluster ID, and its served set (active: the
// fleet's versions per channel, as recorder.ActiveServed gives them).
func AnswersOf(snap *snapshot.Snapshot, active func(channel string) ([]string, uint64), now time.Time) []signed.Answer {
	var out []signed.Answer
	for _, a := range snap.Channels() {
		name := a.Channel.Name
		ans := signed.Answer{Channel: name, Served: []signed.Version{}}
		t := a.Tag
		if a.Rollout != nil {
			t = a.Rollout.Dest("", now)
		}
		if t != nil {
			v := version(*t)
			ans.Answer = &v
		}
		var act []string
		if active != nil {
			act, _ = active(name)
		}
		if set, err := snap.ServedSet(name, act, now); err == nil {
			for _, s := range set {
				ans.Served = append(ans.Served, version(s))
			}
		}
		out = append(out, ans)
	}
	return out
}

func version(t resolver.Tag) signed.Version {
	return signed.Version{Version: t.Version.String(), Tag: t.Name, Digest: t.Digest.String()}
}

// Loop publishes signed answers. Only the replica holding the signer lock
// publishes (Options.Lock): after each snapshot swap (coalesced: at most
// once a second) and every Every, so a role is re-signed before half its
// life. Every replica, holder or not, reads the published revisions and
// compares its configuration's digest with the last publication's.
type Loop struct {
	Publisher *Publisher
	o         LoopOptions
	kick      chan struct{}
	revs      atomic.Pointer[map[string]int64]
	sign      signerLock
	agree     agreement
}

// LoopOptions are a loop's parts beside its Publisher.
type LoopOptions struct {
	// Answers are the channels' answers now, the store revision of the
	// snapshot they were computed from, and the digest of the
	// configuration that computed them.
	Answers func(now time.Time) ([]signed.Answer, int64, string)
	// Lock takes the signer lock: held false when another replica holds
	// it. nil: publish without one (tests of the publisher alone).
	Lock func(ctx context.Context) (Held, bool, error)
	// Reads reads what is published (*store.Store).
	Reads Reads
	// Digest is this replica's configuration digest now (config.Digest
	// of the running sources and channels).
	Digest func() string
	// Replica names this replica in publications (its host name).
	Replica string
	// KeyFile is tuf.online_key_file, for messages.
	KeyFile string
	// Every is how often a role's age is checked (0: 30s); AgreeEvery how
	// often the digests are compared and a disagreement logged (0: 1m).
	Every, AgreeEvery time.Duration
	Log               *slog.Logger
	// Metrics, when set, gets tidemark_config_in_agreement and
	// tidemark_tuf_signer.
	Metrics prometheus.Registerer
}

// Held is the held signer lock (*tufdb.SignerLock).
type Held interface {
	// Lost is closed when the lock's session ended under it.
	Lost() <-chan struct{}
	Release()
	// PublishTUF publishes under the lock, recording pub; it refuses when
	// the lock is no longer held or pub's store revision is older than
	// the last publication's.
	PublishTUF(ctx context.Context, pub signed.Publication, build func(signed.State) (*signed.Write, error)) (bool, error)
}

// Reads is what every replica reads of the publications (*store.Store).
type Reads interface {
	TUFRevisions(ctx context.Context) (map[string]int64, error)
	LastTUFPublication(ctx context.Context) (signed.Publication, error)
	NewestTUFRoot(ctx context.Context) (signed.Meta, error)
	// TUFMeta is role's newest served version with version 0.
	TUFMeta(ctx context.Context, role string, version int64) (signed.Meta, error)
}

// NewLoop makes a loop; Changed kicks it.
func NewLoop(p *Publisher, o LoopOptions) (*Loop, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	l := &Loop{Publisher: p, o: o, kick: make(chan struct{}, 1)}
	if err := l.agree.register(o.Metrics, &l.sign); err != nil {
		return nil, err
	}
	return l, nil
}

// Changed asks for a publication soon (a snapshot was swapped in).
func (l *Loop) Changed(_, _ *snapshot.Snapshot) {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// SetOnline signs with k from the next publication on, which it asks for
// now (a pending root naming k is then served).
func (l *Loop) SetOnline(k ed25519.PrivateKey) {
	l.Publisher.SetOnline(k)
	l.Changed(nil, nil)
}

// Revision is channel's published revision, as of this replica's last
// look; ok false before the first or for a channel never published.
func (l *Loop) Revision(channel string) (int64, bool) {
	m := l.revs.Load()
	if m == nil {
		return 0, false
	}
	r, ok := (*m)[channel]
	return r, ok
}

// Run publishes until ctx ends, then gives the signer lock up.
func (l *Loop) Run(ctx context.Context) {
	every := l.o.Every
	if every <= 0 {
		every = 30 * time.Second
	}
	agreeEvery := l.o.AgreeEvery
	if agreeEvery <= 0 {
		agreeEvery = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	at := time.NewTicker(agreeEvery)
	defer at.Stop()
	// Every second a replica that does not sign looks for a new
	// publication (one row), so its channel objects name the signer's
	// revisions within a second; every 5 s the signer checks that the
	// newest root still names its key (tuf rotate-online adds one), and
	// one that does not sign tries to take the lock (its holder stopped).
	fast := time.NewTicker(time.Second)
	defer fast.Stop()
	ticks := 0
	defer l.sign.release()
	l.agree.check(ctx, l, true)
	_, retry := l.once(ctx)
	var last time.Time
	var wrote bool
	for {
		var again <-chan time.Time
		if retry {
			again = time.After(time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-at.C:
			l.agree.check(ctx, l, false)
			continue
		case <-fast.C:
			ticks++
			switch {
			case l.o.Lock == nil || l.o.Reads == nil:
				continue
			case ticks%5 == 0 && l.sign.held == nil:
				if !l.sign.mayHold(ctx, l) {
					l.follow(ctx)
					continue
				}
				// It took the lock: publish what is due now.
			case ticks%5 == 0:
				l.sign.mayHold(ctx, l)
				continue
			case l.sign.held == nil:
				l.follow(ctx)
				continue
			default:
				continue
			}
		case <-t.C:
		case <-again:
		case <-l.kick:
			// Coalesce a burst of changes (a pin's reload and its
			// rollout's) into one publication, at most one a second.
			wait := max(200*time.Millisecond, time.Second-time.Since(last))
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		if wrote, retry = l.once(ctx); wrote {
			last = time.Now()
		}
	}
}

// once publishes what is due when this replica may sign, and reads the
// published revisions; it reports whether it wrote, and whether to try
// again soon (the snapshot was behind the last publication's).
func (l *Loop) once(ctx context.Context) (wrote, retry bool) {
	now := l.Publisher.Now()
	if l.o.Lock == nil {
		answers, _, _ := l.o.Answers(now)
		wrote, revs, err := l.Publisher.PublishRevisions(ctx, answers)
		l.published(ctx, wrote, revs, err)
		return wrote && err == nil, false
	}
	if !l.sign.mayHold(ctx, l) {
		l.readRevisions(ctx)
		return false, false
	}
	answers, rev, digest := l.o.Answers(now)
	pub := signed.Publication{ConfigDigest: digest, StoreRevision: rev, Replica: l.o.Replica}
	wrote, revs, err := l.Publisher.publishAs(ctx, l.sign.held, pub, answers)
	switch {
	case errors.Is(err, ErrBehind):
		l.o.Log.Info("tuf: not publishing yet: this replica's snapshot is behind the last publication's; trying again in a second", "err", err)
		l.readRevisions(ctx)
		return false, true
	case errors.Is(err, ErrLockLost):
		l.sign.lost(l, err)
		l.readRevisions(ctx)
		return false, false
	}
	l.published(ctx, wrote, revs, err)
	if wrote && err == nil {
		l.agree.published.Store(&pub)
		l.agree.set(l, true)
	}
	return wrote && err == nil, false
}

func (l *Loop) published(ctx context.Context, wrote bool, revs map[string]int64, err error) {
	if err != nil {
		if ctx.Err() == nil {
			l.o.Log.Error("publishing signed answers failed; clients keep the last ones until they expire", "err", err)
		}
		return
	}
	l.revs.Store(&revs)
	if wrote {
		l.o.Log.Info("signed answers published", "channels", len(revs))
	}
}

// follow reads the published revisions when another replica has
// published since the last look.
func (l *Loop) follow(ctx context.Context) {
	p, err := l.o.Reads.LastTUFPublication(ctx)
	if err != nil {
		return // none yet, or the database is away: the next tick looks again
	}
	if last := l.agree.published.Load(); last == nil || last.Timestamp != p.Timestamp {
		l.readRevisions(ctx)
		l.agree.published.Store(&p)
	}
	// The digest moves with a SIGHUP that applies other channels.
	l.agree.set(l, p.ConfigDigest == l.digest())
}

// digest is this replica's configuration digest now.
func (l *Loop) digest() string {
	if l.o.Digest == nil {
		return ""
	}
	return l.o.Digest()
}

// readRevisions reads what the signer published, for Revision.
func (l *Loop) readRevisions(ctx context.Context) {
	if l.o.Reads == nil {
		return
	}
	revs, err := l.o.Reads.TUFRevisions(ctx)
	if err != nil {
		if ctx.Err() == nil {
			l.o.Log.Warn("reading the published revisions failed", "err", err)
		}
		return
	}
	l.revs.Store(&revs)
}
