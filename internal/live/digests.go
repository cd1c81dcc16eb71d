package live

import (
	"time"

	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// DefaultDigestEvery is how often a replica rebuilds its snapshot for
// digest batches alone (Options.DigestEvery) in `tidemark serve`. A first
// index of 100 sources x 2,000 tags writes ~4,000 digest batches, each of
// which rebuilt its source (2,000 tags read and indexed again) on every
// replica: a fifth of the CPU of the digest phase went to those reloads.
const DefaultDigestEvery = 5 * time.Second

// notifyDigests holds a digest-only change (with pendingMu held) until the
// next rebuild, which applies it with every other change; when none comes,
// a timer starts one DigestEvery after the last rebuild that applied
// digests, so a digest batch is served at most that much later. The first
// batch after a quiet spell is applied at once.
func (s *Snapshots) notifyDigests(c snapshot.Change) {
	c.Digests = false
	s.held.Add(c)
	if s.heldTimer != nil {
		return
	}
	s.heldTimer = time.AfterFunc(max(0, time.Until(s.nextDigests)), func() {
		s.pendingMu.Lock()
		s.heldTimer = nil
		s.pending.Merge(s.takeHeld())
		s.pendingMu.Unlock()
		s.wake()
	})
}

// takeHeld returns the held digest changes and forgets them (with
// pendingMu held). A rebuild takes them along whatever woke it: a snapshot
// must not say it includes a store revision (StoreRevision) while a digest
// batch committed before it waits here.
func (s *Snapshots) takeHeld() snapshot.Changes {
	cs := s.held
	if cs.Empty() && cs.Revision == 0 {
		return cs
	}
	s.held = snapshot.Changes{}
	s.nextDigests = time.Now().Add(s.opts.DigestEvery)
	if s.heldTimer != nil {
		s.heldTimer.Stop()
		s.heldTimer = nil
	}
	return cs
}

// withHeld is cs with the held digest changes taken along.
func (s *Snapshots) withHeld(cs snapshot.Changes) snapshot.Changes {
	s.pendingMu.Lock()
	defer s.pendingMu.Unlock()
	cs.Merge(s.takeHeld())
	return cs
}
