// Package tufpub builds and signs Tidemark's TUF metadata with go-tuf's
// metadata package: the first root (tidemark tuf init, with the root key),
// and after each change of a channel's served set, new targets, snapshot
// and timestamp (serve, with the online key). It stores bytes; the server
// serves them.
package tufpub

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/theupdateframework/go-tuf/v2/metadata"
)

// NewKeyFile makes an ed25519 key and writes it to path as a PKCS#8 PEM
// file, mode 0600; an existing file is never overwritten.
func NewKeyFile(path string) (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("%s exists: refusing to overwrite a key (move it away, or use it)", path)
	}
	if err != nil {
		return nil, err
	}
	if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return priv, f.Close()
}

// LoadKeyFile reads an ed25519 PKCS#8 PEM key written by NewKeyFile.
func LoadKeyFile(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s: not a PKCS#8 PEM private key", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ed, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: a %T, want an ed25519 key", path, k)
	}
	return ed, nil
}

func signer(k ed25519.PrivateKey) (signature.Signer, error) {
	return signature.LoadSigner(k, crypto.Hash(0))
}

func publicKey(k ed25519.PrivateKey) (*metadata.Key, error) {
	return metadata.KeyFromPublicKey(k.Public())
}
