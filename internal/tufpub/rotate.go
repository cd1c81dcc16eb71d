package tufpub

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/signed"
)

// RootStore is what a rotation reads and writes (store.Store).
type RootStore interface {
	TUFMeta(ctx context.Context, role string, version int64) (signed.Meta, error)
	PendingTUFRoot(ctx context.Context) (signed.Meta, error)
	DiscardPendingTUFRoot(ctx context.Context) (signed.Meta, error)
}

// ErrPending refuses a rotation while a root signed by rotate-online
// waits to be published: the next root would have to follow it, and it
// may name a key nobody has any more.
var ErrPending = errors.New("a root is pending")

// StartRotation checks everything a rotation needs before any key file
// is made: the root key file loads, the database has a served root that
// key signs for, and no root is pending. It returns the root key and the
// served root.
func StartRotation(ctx context.Context, st RootStore, rootKeyFile string) (ed25519.PrivateKey, signed.Meta, error) {
	rk, err := LoadKeyFile(rootKeyFile)
	if err != nil {
		return nil, signed.Meta{}, fmt.Errorf("--root-key: %w", err)
	}
	cur, err := st.TUFMeta(ctx, signed.Root, 0)
	if errors.Is(err, resolver.ErrNotFound) {
		return nil, signed.Meta{}, fmt.Errorf("no TUF root in this database: run tidemark tuf init first")
	}
	if err != nil {
		return nil, signed.Meta{}, err
	}
	if err := checkRootKey(cur, rk); err != nil {
		return nil, signed.Meta{}, err
	}
	p, err := st.PendingTUFRoot(ctx)
	switch {
	case err == nil:
		return nil, signed.Meta{}, fmt.Errorf("%w: version %d, from tuf rotate-online, waits for serve to run with the online key it names;"+
			" publish it so, or drop it with tidemark tuf discard-pending --root-key %s; no key file was created", ErrPending, p.Version, rootKeyFile)
	case !errors.Is(err, resolver.ErrNotFound):
		return nil, signed.Meta{}, err
	}
	return rk, cur, nil
}

// DiscardPending drops the pending root, on the word of the root key the
// served root names (whoever holds it could sign a replacement anyway),
// and returns the version dropped and the online key ID it named.
func DiscardPending(ctx context.Context, st RootStore, rootKeyFile string) (int64, string, error) {
	rk, err := LoadKeyFile(rootKeyFile)
	if err != nil {
		return 0, "", fmt.Errorf("--root-key: %w", err)
	}
	cur, err := st.TUFMeta(ctx, signed.Root, 0)
	if err != nil {
		return 0, "", err
	}
	if err := checkRootKey(cur, rk); err != nil {
		return 0, "", err
	}
	p, err := st.DiscardPendingTUFRoot(ctx)
	if errors.Is(err, resolver.ErrNotFound) {
		return 0, "", fmt.Errorf("no root is pending (the newest, version %d, is published): nothing to discard", cur.Version)
	}
	if err != nil {
		return 0, "", err
	}
	online := ""
	if root, err := metadata.Root().FromBytes(p.Body); err == nil {
		if r := root.Signed.Roles[metadata.TIMESTAMP]; r != nil && len(r.KeyIDs) > 0 {
			online = r.KeyIDs[0]
		}
	}
	return p.Version, online, nil
}

// checkRootKey says whether key is the one cur names for the root role.
func checkRootKey(cur signed.Meta, key ed25519.PrivateKey) error {
	root, err := metadata.Root().FromBytes(cur.Body)
	if err != nil {
		return fmt.Errorf("the current root: %w", err)
	}
	pub, err := publicKey(key)
	if err != nil {
		return err
	}
	id, err := pub.ID()
	if err != nil {
		return err
	}
	if r := root.Signed.Roles[metadata.ROOT]; r == nil || len(r.KeyIDs) == 0 || r.KeyIDs[0] != id {
		return fmt.Errorf("--root-key is not the key root version %d names for the root role", cur.Version)
	}
	return nil
}

// NextRoot is the root after cur: one version higher, expiring after
// exp.Root from now; with newRoot, the root role keyed by it instead of
// oldRoot; with newOnline, targets, snapshot and timestamp keyed by it.
// It is signed by oldRoot (the threshold of cur's root role) and by
// newRoot when that differs (the threshold of its own).
func NextRoot(cur signed.Meta, oldRoot, newRoot ed25519.PrivateKey, newOnline ed25519.PublicKey, exp Expires, now time.Time) (signed.Meta, error) {
	if err := checkRootKey(cur, oldRoot); err != nil {
		return signed.Meta{}, err
	}
	root, err := metadata.Root().FromBytes(cur.Body)
	if err != nil {
		return signed.Meta{}, fmt.Errorf("the current root: %w", err)
	}
	root.ClearSignatures()
	root.Signed.Version = cur.Version + 1
	root.Signed.Expires = now.Add(exp.Root).UTC().Truncate(time.Second)
	replace := func(role string, pub ed25519.PublicKey) error {
		k, err := metadata.KeyFromPublicKey(pub)
		if err != nil {
			return err
		}
		for _, id := range append([]string(nil), root.Signed.Roles[role].KeyIDs...) {
			if err := root.Signed.RevokeKey(id, role); err != nil {
				return err
			}
		}
		return root.Signed.AddKey(k, role)
	}
	if newRoot != nil && !newRoot.Equal(oldRoot) {
		if err := replace(metadata.ROOT, newRoot.Public().(ed25519.PublicKey)); err != nil {
			return signed.Meta{}, err
		}
	}
	if newOnline != nil {
		for _, role := range []string{metadata.TARGETS, metadata.SNAPSHOT, metadata.TIMESTAMP} {
			if err := replace(role, newOnline); err != nil {
				return signed.Meta{}, err
			}
		}
	}
	signers := []ed25519.PrivateKey{oldRoot}
	if newRoot != nil && !newRoot.Equal(oldRoot) {
		signers = append(signers, newRoot)
	}
	return signRoot(root, signers...)
}
