package tufpub

import (
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/tidemark-dev/tidemark/resolver/signed"
)

// NextRoot is the root after cur: one version higher, expiring after
// exp.Root from now; with newRoot, the root role keyed by it instead of
// oldRoot; with newOnline, targets, snapshot and timestamp keyed by it.
// It is signed by oldRoot (the threshold of cur's root role) and by
// newRoot when that differs (the threshold of its own).
func NextRoot(cur signed.Meta, oldRoot, newRoot ed25519.PrivateKey, newOnline ed25519.PublicKey, exp Expires, now time.Time) (signed.Meta, error) {
	root, err := metadata.Root().FromBytes(cur.Body)
	if err != nil {
		return signed.Meta{}, fmt.Errorf("the current root: %w", err)
	}
	oldPub, err := publicKey(oldRoot)
	if err != nil {
		return signed.Meta{}, err
	}
	oldID, err := oldPub.ID()
	if err != nil {
		return signed.Meta{}, err
	}
	if r := root.Signed.Roles[metadata.ROOT]; r == nil || len(r.KeyIDs) == 0 || r.KeyIDs[0] != oldID {
		return signed.Meta{}, fmt.Errorf("--root-key is not the key root version %d names for the root role", cur.Version)
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
