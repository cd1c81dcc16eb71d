package gates

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// Key is a cosign public key, parsed once at configuration time.
type Key struct {
	File string // where it was read from, for messages
	pub  crypto.PublicKey
	id   string // sha256 of the DER form: part of the cache key, so a new key re-checks
}

// LoadKey reads a PEM public key as `cosign generate-key-pair` writes it
// (cosign.pub), or an Ed25519 key in the same PKIX form. Errors are one
// line and name the file.
func LoadKey(file string) (*Key, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("cosign key: %w", err) // *PathError names the file
	}
	k, err := ParseKey(b)
	if err != nil {
		return nil, fmt.Errorf("cosign key %s: %w", file, err)
	}
	k.File = file
	return k, nil
}

var errKeyType = errors.New("want an ECDSA P-256 or Ed25519 public key")

// ParseKey parses a PEM "PUBLIC KEY" block (PKIX) holding an ECDSA P-256 or
// an Ed25519 key.
func ParseKey(b []byte) (*Key, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	if block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("PEM block is %q, want \"PUBLIC KEY\" (the .pub file, not the private key)", block.Type)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing public key: %w", err)
	}
	switch p := pub.(type) {
	case *ecdsa.PublicKey:
		if p.Curve != elliptic.P256() {
			return nil, fmt.Errorf("ECDSA curve %s: %w", p.Curve.Params().Name, errKeyType)
		}
	case ed25519.PublicKey:
	default:
		return nil, fmt.Errorf("%T: %w", pub, errKeyType)
	}
	sum := sha256.Sum256(block.Bytes)
	return &Key{pub: pub, id: hex.EncodeToString(sum[:])}, nil
}

// ID is the key's fingerprint (sha256 of its DER encoding, hex).
func (k *Key) ID() string { return k.id }

// verify reports whether sig is the key's signature of payload the way
// cosign signs: ECDSA over the payload's sha256 (ASN.1 DER); Ed25519 over
// the payload bytes (older cosign) or, as current cosign signs with an
// Ed25519 key by default, Ed25519ph over the payload's sha512. Both are the
// key holder's signature of these bytes, so either passes.
func (k *Key) verify(payload, sig []byte) bool {
	switch p := k.pub.(type) {
	case *ecdsa.PublicKey:
		sum := sha256.Sum256(payload)
		return ecdsa.VerifyASN1(p, sum[:], sig)
	case ed25519.PublicKey:
		if ed25519.Verify(p, payload, sig) {
			return true
		}
		sum := sha512.Sum512(payload)
		return ed25519.VerifyWithOptions(p, sum[:], sig, &ed25519.Options{Hash: crypto.SHA512}) == nil
	}
	return false
}
