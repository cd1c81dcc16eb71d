package tufpub

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/signed"
)

// Expires are the roles' lifetimes. Each role is signed again, with a
// higher version, once half of its life has passed.
type Expires struct {
	Root, Targets, Snapshot, Timestamp time.Duration
}

// DefaultExpires: the root a year, targets 30 days, snapshot 7 days, the
// timestamp a day (Sigstore's public repository signs its timestamp daily
// with a 7-day expiry).
var DefaultExpires = Expires{Root: 365 * 24 * time.Hour, Targets: 30 * 24 * time.Hour, Snapshot: 7 * 24 * time.Hour, Timestamp: 24 * time.Hour}

// Root is the first root: the root role keyed by rootKey, targets,
// snapshot and timestamp by onlineKey, consistent snapshots, signed with
// rootKey.
func Root(rootKey, onlineKey ed25519.PrivateKey, exp Expires, now time.Time) (signed.Meta, error) {
	root := metadata.Root(now.Add(exp.Root).UTC().Truncate(time.Second))
	rk, err := publicKey(rootKey)
	if err != nil {
		return signed.Meta{}, err
	}
	ok, err := publicKey(onlineKey)
	if err != nil {
		return signed.Meta{}, err
	}
	if err := root.Signed.AddKey(rk, metadata.ROOT); err != nil {
		return signed.Meta{}, err
	}
	for _, role := range []string{metadata.TARGETS, metadata.SNAPSHOT, metadata.TIMESTAMP} {
		if err := root.Signed.AddKey(ok, role); err != nil {
			return signed.Meta{}, err
		}
	}
	return signRoot(root, rootKey)
}

// signRoot signs root with each of keys and returns its bytes.
func signRoot(root *metadata.Metadata[metadata.RootType], keys ...ed25519.PrivateKey) (signed.Meta, error) {
	for _, k := range keys {
		s, err := signer(k)
		if err != nil {
			return signed.Meta{}, err
		}
		if _, err := root.Sign(s); err != nil {
			return signed.Meta{}, err
		}
	}
	b, err := root.ToBytes(false)
	if err != nil {
		return signed.Meta{}, err
	}
	return signed.Meta{Role: signed.Root, Version: root.Signed.Version, Body: b, Expires: root.Signed.Expires}, nil
}

// Store keeps what is published (*store.Store).
type Store interface {
	PublishTUF(ctx context.Context, build func(signed.State) (*signed.Write, error)) (bool, error)
}

// Publisher signs new metadata with the online key when an answer changes
// or a role is past half its life.
type Publisher struct {
	Store Store
	// Online is the key it signs with; SetOnline replaces it while it runs
	// (SIGHUP after tidemark tuf rotate-online).
	Online  ed25519.PrivateKey
	Expires Expires
	Now     func() time.Time
	mu      sync.Mutex // guards Online once publishing
}

// SetOnline makes k the online key from the next publication on: with a
// pending root naming it, that root is served and every role re-signed.
func (p *Publisher) SetOnline(k ed25519.PrivateKey) {
	p.mu.Lock()
	p.Online = k
	p.mu.Unlock()
}

func (p *Publisher) online() ed25519.PrivateKey {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.Online
}

// Publish makes answers (one per channel) the published ones: a channel
// whose answer or served set changed gets a new revision and target file,
// and targets, snapshot and timestamp are signed anew as needed, in one
// transaction. It reports whether anything was written.
func (p *Publisher) Publish(ctx context.Context, answers []signed.Answer) (bool, error) {
	wrote, _, err := p.PublishRevisions(ctx, answers)
	return wrote, err
}

// PublishRevisions is Publish, also answering every channel's revision as
// published now (by this call or another replica's).
func (p *Publisher) PublishRevisions(ctx context.Context, answers []signed.Answer) (bool, map[string]int64, error) {
	build, revs := p.recording(answers)
	wrote, err := p.Store.PublishTUF(ctx, build)
	return wrote, revs, err
}

// recording is build over answers at now as a PublishTUF callback, and
// the map it fills with every channel's revision as published (this
// call's, or another replica's found in the state).
func (p *Publisher) recording(answers []signed.Answer) (func(signed.State) (*signed.Write, error), map[string]int64) {
	now := p.Now().UTC()
	revs := map[string]int64{}
	return func(st signed.State) (*signed.Write, error) {
		clear(revs)
		for k, c := range st.Channels {
			revs[k] = c.Revision
		}
		w, err := p.build(st, answers, now)
		if w != nil {
			for _, c := range w.Channels {
				revs[c.Channel] = c.Revision
			}
		}
		return w, err
	}, revs
}

func (p *Publisher) build(st signed.State, answers []signed.Answer, now time.Time) (*signed.Write, error) {
	rootMeta, ok := st.Latest[signed.Root]
	if !ok {
		return nil, fmt.Errorf("%w: no TUF root: run tidemark tuf init (after tidemark migrate)", resolver.ErrState)
	}
	key := p.online()
	keyID, err := onlineKeyID(key)
	if err != nil {
		return nil, err
	}
	activate := int64(0)
	if pend := st.Pending; pend != nil {
		// A root naming a new online key waits for serve to run with it:
		// this is that serve. It is served from now on, with every role
		// re-signed by the new key.
		if id, err := targetsKeyID(pend.Body); err == nil && id == keyID {
			activate, rootMeta = pend.Version, *pend
		}
	}
	id, err := targetsKeyID(rootMeta.Body)
	if err != nil {
		return nil, fmt.Errorf("the stored root: %w", err)
	}
	if id != keyID {
		// ErrState: the store passes it on as it is (an error it does not
		// know it reports as a lost connection).
		return nil, fmt.Errorf("%w: the online key is not the one root version %d names for targets: run serve with the key tuf init or tuf rotate-online made", resolver.ErrState, rootMeta.Version)
	}
	w := &signed.Write{Activate: activate}
	channels := map[string]signed.Channel{}
	for k, c := range st.Channels {
		channels[k] = c
	}
	for _, a := range answers {
		old, had := st.Channels[a.Channel]
		if had && old.Content == a.Content() {
			continue
		}
		a.Revision, a.Issued = old.Revision+1, now
		b := a.Bytes()
		c := signed.Channel{Channel: a.Channel, Revision: a.Revision, Content: a.Content(), Path: signed.Path(a.Channel), Hash: signed.Hash(b), Length: int64(len(b))}
		w.Targets = append(w.Targets, signed.Target{Path: c.Path, Hash: c.Hash, Body: b})
		w.Channels = append(w.Channels, c)
		channels[a.Channel] = c
	}
	stale := func(role string, life time.Duration) bool {
		m, ok := st.Latest[role]
		return !ok || now.After(m.Expires.Add(-life/2))
	}
	needTargets := len(w.Channels) > 0 || activate > 0 || stale(signed.Targets, p.Expires.Targets)
	needSnapshot := needTargets || stale(signed.Snapshot, p.Expires.Snapshot)
	needTimestamp := needSnapshot || stale(signed.Timestamp, p.Expires.Timestamp)
	if !needTimestamp {
		return nil, nil
	}
	s, err := signer(key)
	if err != nil {
		return nil, err
	}
	targetsVersion := st.Latest[signed.Targets].Version
	if needTargets {
		targetsVersion++
		t := metadata.Targets(now.Add(p.Expires.Targets).Truncate(time.Second))
		t.Signed.Version = targetsVersion
		names := make([]string, 0, len(channels))
		for k := range channels {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			c := channels[k]
			h, err := hex.DecodeString(c.Hash)
			if err != nil {
				return nil, fmt.Errorf("channel %q: stored hash %q: %w", k, c.Hash, err)
			}
			t.Signed.Targets[c.Path] = &metadata.TargetFiles{Length: c.Length, Hashes: metadata.Hashes{"sha256": h}, Path: c.Path}
		}
		m, err := signMeta(t, s, signed.Targets, targetsVersion, t.Signed.Expires)
		if err != nil {
			return nil, err
		}
		w.Meta = append(w.Meta, m)
	}
	snapshotVersion := st.Latest[signed.Snapshot].Version
	if needSnapshot {
		snapshotVersion++
		sn := metadata.Snapshot(now.Add(p.Expires.Snapshot).Truncate(time.Second))
		sn.Signed.Version = snapshotVersion
		sn.Signed.Meta["targets.json"] = metadata.MetaFile(targetsVersion)
		m, err := signMeta(sn, s, signed.Snapshot, snapshotVersion, sn.Signed.Expires)
		if err != nil {
			return nil, err
		}
		w.Meta = append(w.Meta, m)
	}
	ts := metadata.Timestamp(now.Add(p.Expires.Timestamp).Truncate(time.Second))
	ts.Signed.Version = st.Latest[signed.Timestamp].Version + 1
	ts.Signed.Meta["snapshot.json"] = metadata.MetaFile(snapshotVersion)
	m, err := signMeta(ts, s, signed.Timestamp, ts.Signed.Version, ts.Signed.Expires)
	if err != nil {
		return nil, err
	}
	w.Meta = append(w.Meta, m)
	return w, nil
}

func onlineKeyID(k ed25519.PrivateKey) (string, error) {
	pub, err := publicKey(k)
	if err != nil {
		return "", err
	}
	return pub.ID()
}

// targetsKeyID is the key the root in body names for targets.
func targetsKeyID(body []byte) (string, error) {
	root, err := metadata.Root().FromBytes(body)
	if err != nil {
		return "", err
	}
	r := root.Signed.Roles[metadata.TARGETS]
	if r == nil || len(r.KeyIDs) == 0 {
		return "", fmt.Errorf("root version %d names no targets key", root.Signed.Version)
	}
	return r.KeyIDs[0], nil
}

// signMeta signs md and returns its bytes as the store keeps them.
func signMeta[T metadata.Roles](md *metadata.Metadata[T], s signature.Signer, role string, version int64, expires time.Time) (signed.Meta, error) {
	if _, err := md.Sign(s); err != nil {
		return signed.Meta{}, fmt.Errorf("signing %s version %d: %w", role, version, err)
	}
	b, err := md.ToBytes(false)
	if err != nil {
		return signed.Meta{}, err
	}
	return signed.Meta{Role: role, Version: version, Body: b, Expires: expires}, nil
}
