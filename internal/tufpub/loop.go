package tufpub

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"sync/atomic"
	"time"

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

// Loop publishes on every replica: after each snapshot swap (coalesced:
// at most once a second) and every Every, so a role is re-signed before
// half its life. Replicas agree through the store's lock: one signs a
// change, the others find it published and write nothing.
type Loop struct {
	Publisher *Publisher
	// Answers are the channels' answers now.
	Answers func(now time.Time) []signed.Answer
	Every   time.Duration // 0: 30s
	Log     *slog.Logger
	kick    chan struct{}
	revs    atomic.Pointer[map[string]int64]
}

// NewLoop makes a loop; Changed kicks it.
func NewLoop(p *Publisher, answers func(now time.Time) []signed.Answer, log *slog.Logger) *Loop {
	return &Loop{Publisher: p, Answers: answers, Log: log, kick: make(chan struct{}, 1)}
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

// Run publishes until ctx ends.
func (l *Loop) Run(ctx context.Context) {
	every := l.Every
	if every <= 0 {
		every = 30 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	l.once(ctx)
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
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
		if l.once(ctx) {
			last = time.Now()
		}
	}
}

// once publishes what is due and reports whether it wrote.
func (l *Loop) once(ctx context.Context) bool {
	now := l.Publisher.Now()
	wrote, revs, err := l.Publisher.PublishRevisions(ctx, l.Answers(now))
	if err != nil {
		if ctx.Err() == nil {
			l.Log.Error("publishing signed answers failed; clients keep the last ones until they expire", "err", err)
		}
		return false
	}
	l.revs.Store(&revs)
	if wrote {
		l.Log.Info("signed answers published", "channels", len(revs))
	}
	return wrote
}
