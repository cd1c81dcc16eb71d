// Package cosigntest makes real cosign-format signatures and multi-platform
// image indexes for tests: a key pair generated per test (its public half
// written as cosign.pub is), the simple-signing payload byte for byte as
// `cosign sign` writes it, and the signature image at the classic
// sha256-<hex>.sig tag.
package cosigntest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/tidemark-dev/tidemark/indexer/gates"
)

// Signer signs as cosign does, with a key generated for the test.
type Signer struct {
	priv    crypto.Signer
	ph      bool   // Ed25519ph, as current cosign signs with an Ed25519 key
	PubFile string // the public key, PEM, as cosign.pub
}

// NewSigner is an ECDSA P-256 signer, as `cosign generate-key-pair` makes.
func NewSigner(t testing.TB) *Signer { return NewSignerOf(t, "ecdsa") }

// NewSignerOf generates a key pair of kind ecdsa (P-256), ed25519 (signing
// the payload itself) or ed25519ph (its SHA-512, as current cosign does)
// and writes the public key to a file.
func NewSignerOf(t testing.TB, kind string) *Signer {
	t.Helper()
	var priv crypto.Signer
	switch kind {
	case "ecdsa":
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		priv = k
	case "ed25519", "ed25519ph":
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		priv = k
	default:
		t.Fatalf("cosigntest: unknown key kind %q (want ecdsa, ed25519 or ed25519ph)", kind)
	}
	der, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), kind+".pub")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Signer{priv: priv, ph: kind == "ed25519ph", PubFile: file}
}

// Key is the signer's public key as the gates load it.
func (s *Signer) Key(t testing.TB) *gates.Key {
	t.Helper()
	k, err := gates.LoadKey(s.PubFile)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Payload is cosign's simple-signing payload naming digest d of repo,
// byte for byte as `cosign sign` writes it.
func Payload(t testing.TB, repo name.Repository, d v1.Hash) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"critical": map[string]any{
			"identity": map[string]any{"docker-reference": repo.String()},
			"image":    map[string]any{"docker-manifest-digest": d.String()},
			"type":     "cosign container image signature",
		},
		"optional": nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Sign is the base64 signature of payload as cosign makes it: ECDSA over
// the payload's sha256, Ed25519 over the payload (Ed25519ph its SHA-512).
func (s *Signer) Sign(t testing.TB, payload []byte) string {
	t.Helper()
	var sig []byte
	var err error
	switch k := s.priv.(type) {
	case *ecdsa.PrivateKey:
		sum := sha256.Sum256(payload)
		sig, err = ecdsa.SignASN1(rand.Reader, k, sum[:])
	case ed25519.PrivateKey:
		if s.ph {
			sum := sha512.Sum512(payload)
			sig, err = k.Sign(nil, sum[:], &ed25519.Options{Hash: crypto.SHA512})
		} else {
			sig = ed25519.Sign(k, payload)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(sig)
}

// SignatureImage is a cosign signature image: the simple-signing payload
// as its layer, the signature in the layer's annotation.
func SignatureImage(t testing.TB, payload []byte, sigB64 string) v1.Image {
	t.Helper()
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer:       static.NewLayer(payload, gates.SimpleSigningType),
		Annotations: map[string]string{gates.SignatureAnnotation: sigB64},
	})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// PushSignature pushes a signature image for digest d at its classic tag
// sha256-<hex>.sig in repo: payload in a layer, the signature in the
// layer's annotation.
func PushSignature(t testing.TB, repo name.Repository, d v1.Hash, payload []byte, sigB64 string) {
	t.Helper()
	if err := remote.Write(repo.Tag(gates.SignatureTag(d)), SignatureImage(t, payload, sigB64)); err != nil {
		t.Fatal(err)
	}
}

// SignAndPush signs digest d with s and pushes the signature.
func (s *Signer) SignAndPush(t testing.TB, repo name.Repository, d v1.Hash) {
	t.Helper()
	p := Payload(t, repo, d)
	PushSignature(t, repo, d, p, s.Sign(t, p))
}

// PushIndex pushes an OCI image index with one small image per platform
// ("os/arch[/variant]") under tag, and returns its digest.
func PushIndex(t testing.TB, repo name.Repository, tag string, platforms ...string) v1.Hash {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, s := range platforms {
		p, err := v1.ParsePlatform(s)
		if err != nil {
			t.Fatal(err)
		}
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	if err := remote.WriteIndex(repo.Tag(tag), idx); err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
