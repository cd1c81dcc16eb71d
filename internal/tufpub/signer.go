package tufpub

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/signed"
)

// One signer: only the replica holding the signer lock publishes, and
// only while it can sign with the online key the newest root names.

// ErrBehind and ErrLockLost are the publications a signer's store refuses
// (signed.ErrBehind, signed.ErrLockLost).
var (
	ErrBehind   = signed.ErrBehind
	ErrLockLost = signed.ErrLockLost
)

// publishAs is PublishRevisions under the signer lock held, recording pub.
func (p *Publisher) publishAs(ctx context.Context, held Held, pub signed.Publication, answers []signed.Answer) (bool, map[string]int64, error) {
	build, revs := p.recording(answers)
	wrote, err := held.PublishTUF(ctx, pub, build)
	return wrote, revs, err
}

// canSign says what is wrong when the online key is not the one root (the
// newest, published or pending) names for targets, and what to run.
func (p *Publisher) canSign(root signed.Meta, pending bool, keyFile string) error {
	keyID, err := onlineKeyID(p.online())
	if err != nil {
		return err
	}
	id, err := targetsKeyID(root.Body)
	if err != nil {
		return fmt.Errorf("root version %d: %w", root.Version, err)
	}
	if id == keyID {
		return nil
	}
	state, fix := "", "run serve with the online key it names (tuf.online_key_file, then SIGHUP or a restart)"
	if pending {
		state = " (pending: tidemark tuf rotate-online made it)"
		fix = "run serve with the online key tidemark tuf rotate-online wrote (tuf.online_key_file, then SIGHUP or a restart), " +
			"or drop the pending root with tidemark tuf discard-pending --root-key FILE"
	}
	return fmt.Errorf("%w: the online key %s (key ID %.12s…) is not the one root version %d%s names for targets (key ID %.12s…); %s",
		resolver.ErrState, keyFile, keyID, root.Version, state, id, fix)
}

// signerLock is a loop's hold on the signer lock.
type signerLock struct {
	held    Held
	holding atomic.Bool
	refused string // the last reason this replica could not sign, as logged
}

// mayHold takes or keeps the lock when this replica can sign with the
// newest root's online key, and gives it up at once when it cannot.
func (s *signerLock) mayHold(ctx context.Context, l *Loop) bool {
	if s.held != nil {
		select {
		case <-s.held.Lost():
			s.lost(l, errors.New("its database session ended"))
		default:
		}
	}
	root, err := l.o.Reads.NewestTUFRoot(ctx)
	if err != nil {
		if ctx.Err() == nil {
			l.o.Log.Warn("tuf: reading the newest root failed; not publishing until it answers", "err", err)
		}
		return false
	}
	pending := false
	if latest, ok := l.publishedRoot(ctx); ok {
		pending = root.Version > latest
	}
	if err := l.Publisher.canSign(root, pending, l.o.KeyFile); err != nil {
		msg := err.Error()
		if s.held != nil {
			s.release()
			l.o.Log.Error("tuf: released the signer lock: this replica cannot sign; it serves the newest published metadata", "reason", msg)
		} else if msg != s.refused {
			l.o.Log.Error("tuf: not taking the signer lock: this replica cannot sign; it serves the newest published metadata", "reason", msg)
		}
		s.refused = msg
		return false
	}
	if s.refused != "" {
		l.o.Log.Info("tuf: this replica can sign again")
		s.refused = ""
	}
	if s.held == nil {
		h, ok, err := l.o.Lock(ctx)
		if err != nil {
			if ctx.Err() == nil {
				l.o.Log.Warn("tuf: taking the signer lock failed", "err", err)
			}
			return false
		}
		if !ok {
			return false
		}
		s.held = h
		s.holding.Store(true)
		l.o.Log.Info("tuf: this replica holds the signer lock: it signs the answers every replica serves", "digest", l.digest())
	}
	return true
}

// lost forgets a lock whose session ended or that a publication found
// no longer held.
func (s *signerLock) lost(l *Loop, why error) {
	if s.held == nil {
		return
	}
	l.o.Log.Warn("tuf: the signer lock was lost; another replica may sign now", "err", why)
	s.release()
}

func (s *signerLock) release() {
	if s.held != nil {
		s.held.Release()
		s.held = nil
	}
	s.holding.Store(false)
}

// publishedRoot is the newest root served (not pending).
func (l *Loop) publishedRoot(ctx context.Context) (int64, bool) {
	m, err := l.o.Reads.TUFMeta(ctx, signed.Root, 0)
	if err != nil {
		return 0, false
	}
	return m.Version, true
}

// agreement compares this replica's configuration digest with the last
// publication's.
type agreement struct {
	gauge     prometheus.Gauge
	published atomic.Pointer[signed.Publication]
	differs   bool // as last set; only the loop's goroutine reads it
}

// set records whether the digests agree, saying so when they come to
// agree again.
func (a *agreement) set(l *Loop, agree bool) {
	if agree {
		a.gauge.Set(1)
		if a.differs {
			l.o.Log.Info("tuf: this replica's configuration of sources and channels agrees with the signed answers' again", "digest", l.digest())
		}
	} else {
		a.gauge.Set(0)
	}
	a.differs = !agree
}

func (a *agreement) register(reg prometheus.Registerer, s *signerLock) error {
	a.gauge = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tidemark_config_in_agreement",
		Help: "1 when this replica's configuration of sources and channels has the digest of the last signed publication's, 0 when it differs."})
	a.gauge.Set(1)
	if reg == nil {
		return nil
	}
	holder := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tidemark_tuf_signer",
		Help: "1 while this replica holds the signer lock (it alone publishes signed answers)."}, func() float64 {
		if s.holding.Load() {
			return 1
		}
		return 0
	})
	for _, c := range []prometheus.Collector{a.gauge, holder} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register signer metrics: %w", err)
		}
	}
	return nil
}

// check reads the last publication and says, at WARN, when its digest is
// not this replica's.
func (a *agreement) check(ctx context.Context, l *Loop, startup bool) {
	if l.o.Reads == nil {
		return
	}
	p, err := l.o.Reads.LastTUFPublication(ctx)
	if errors.Is(err, resolver.ErrNotFound) {
		a.set(l, true) // nothing published yet to differ from
		return
	}
	if err != nil {
		if ctx.Err() == nil {
			l.o.Log.Warn("tuf: reading the last publication failed", "err", err)
		}
		return
	}
	a.published.Store(&p)
	digest := l.digest()
	a.set(l, p.ConfigDigest == digest)
	if p.ConfigDigest == digest {
		return
	}
	when := "now"
	if startup {
		when = "at start-up"
	}
	l.o.Log.Warn("tuf: this replica's configuration of sources and channels differs from the one the signed answers were computed with; "+
		"its channel answers may differ from the signed ones until every replica runs one configuration",
		"digest", digest, "published_digest", p.ConfigDigest, "published_by", p.Replica, "checked", when)
}

// Status is what GET /api/v1/status says of signing: this replica's
// digest, the last publication's (nil before the first), and whether this
// replica holds the signer lock.
func (l *Loop) Status() (digest string, published *signed.Publication, holding bool) {
	return l.digest(), l.agree.published.Load(), l.sign.holding.Load()
}
