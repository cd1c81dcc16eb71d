// Package cosigntest makes real cosign-format signatures and multi-platform
// image indexes for tests: a key pair generated per test (its public half
// written as cosign.pub is), the simple-signing payload byte for byte as
// `cosign sign` writes it, and the signature image at the classic
// sha256-<hex>.sig tag.
package cosigntest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
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

// Signer signs with an ECDSA P-256 key, as `cosign generate-key-pair` makes.
type Signer struct {
	priv    *ecdsa.PrivateKey
	PubFile string // the public key, PEM, as cosign.pub
}

// NewSigner generates a key pair and writes the public key to a file.
func NewSigner(t testing.TB) *Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Signer{priv: k, PubFile: file}
}

// Payload is cosign's simple-signing payload naming digest d of repo.
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

// Sign is the base64 ECDSA signature of payload's sha256, as cosign signs.
func (s *Signer) Sign(t testing.TB, payload []byte) string {
	t.Helper()
	sum := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, s.priv, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(sig)
}

// PushSignature pushes a signature image for digest d at its classic tag
// sha256-<hex>.sig in repo: payload in a layer, the signature in the
// layer's annotation.
func PushSignature(t testing.TB, repo name.Repository, d v1.Hash, payload []byte, sigB64 string) {
	t.Helper()
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer:       static.NewLayer(payload, gates.SimpleSigningType),
		Annotations: map[string]string{gates.SignatureAnnotation: sigB64},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(repo.Tag(gates.SignatureTag(d)), img); err != nil {
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
