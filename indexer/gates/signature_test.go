package gates_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/tidemark-dev/tidemark/indexer/gates"
	"github.com/tidemark-dev/tidemark/internal/cosigntest"
)

func TestVerifySignature(t *testing.T) {
	for _, tc := range []struct {
		name       string
		kind       string
		push       func(t *testing.T, r *testRegistry, s *cosigntest.Signer, d v1.Hash)
		want       gates.SigState
		reason     string // contained in Reason
		wherePrefx string
	}{
		{
			name: "ecdsa signature at the .sig tag is ok", kind: "ecdsa", want: gates.SigOK, wherePrefx: "tag sha256-",
			push: func(t *testing.T, r *testRegistry, s *cosigntest.Signer, d v1.Hash) {
				p := cosigntest.Payload(t, r.repo, d)
				r.pushTagSignature(d, p, s.Sign(t, p))
			},
		},
		{
			name: "ed25519 signature at the .sig tag is ok", kind: "ed25519", want: gates.SigOK, wherePrefx: "tag sha256-",
			push: func(t *testing.T, r *testRegistry, s *cosigntest.Signer, d v1.Hash) {
				p := cosigntest.Payload(t, r.repo, d)
				r.pushTagSignature(d, p, s.Sign(t, p))
			},
		},
		{
			name: "ed25519ph signature (current cosign) at the .sig tag is ok", kind: "ed25519ph", want: gates.SigOK, wherePrefx: "tag sha256-",
			push: func(t *testing.T, r *testRegistry, s *cosigntest.Signer, d v1.Hash) {
				p := cosigntest.Payload(t, r.repo, d)
				r.pushTagSignature(d, p, s.Sign(t, p))
			},
		},
		{
			name: "ecdsa signature as a referrer is ok", kind: "ecdsa", want: gates.SigOK, wherePrefx: "referrer sha256:",
			push: func(t *testing.T, r *testRegistry, s *cosigntest.Signer, d v1.Hash) {
				p := cosigntest.Payload(t, r.repo, d)
				r.pushReferrer(d, p, s.Sign(t, p))
			},
		},
		{
			name: "ed25519 signature as a referrer is ok", kind: "ed25519", want: gates.SigOK, wherePrefx: "referrer sha256:",
			push: func(t *testing.T, r *testRegistry, s *cosigntest.Signer, d v1.Hash) {
				p := cosigntest.Payload(t, r.repo, d)
				r.pushReferrer(d, p, s.Sign(t, p))
			},
		},
		{
			name: "no signature is missing", kind: "ecdsa", want: gates.SigMissing,
			push: func(*testing.T, *testRegistry, *cosigntest.Signer, v1.Hash) {},
		},
		{
			name: "signature by another key is invalid", kind: "ecdsa", want: gates.SigInvalid, reason: "does not verify",
			push: func(t *testing.T, r *testRegistry, _ *cosigntest.Signer, d v1.Hash) {
				p := cosigntest.Payload(t, r.repo, d)
				r.pushTagSignature(d, p, cosigntest.NewSignerOf(t, "ecdsa").Sign(t, p))
			},
		},
		{
			name: "ed25519 signature checked with an ecdsa key is invalid", kind: "ecdsa", want: gates.SigInvalid, reason: "does not verify",
			push: func(t *testing.T, r *testRegistry, _ *cosigntest.Signer, d v1.Hash) {
				p := cosigntest.Payload(t, r.repo, d)
				r.pushReferrer(d, p, cosigntest.NewSignerOf(t, "ed25519").Sign(t, p))
			},
		},
		{
			name: "payload naming another digest is invalid", kind: "ed25519", want: gates.SigInvalid, reason: "payload names another digest: sha256:",
			push: func(t *testing.T, r *testRegistry, s *cosigntest.Signer, d v1.Hash) {
				other := r.image("v1.0.0-other", "linux", "amd64", "")
				p := cosigntest.Payload(t, r.repo, other) // a valid signature, of another image
				r.pushTagSignature(d, p, s.Sign(t, p))
			},
		},
		{
			name: "annotation that is not base64 is invalid", kind: "ecdsa", want: gates.SigInvalid, reason: "malformed: signature annotation is not base64",
			push: func(t *testing.T, r *testRegistry, s *cosigntest.Signer, d v1.Hash) {
				p := cosigntest.Payload(t, r.repo, d)
				r.pushTagSignature(d, p, "%%"+s.Sign(t, p)[2:])
			},
		},
		{
			name: "annotation with a flipped signature byte is invalid", kind: "ecdsa", want: gates.SigInvalid, reason: "does not verify",
			push: func(t *testing.T, r *testRegistry, s *cosigntest.Signer, d v1.Hash) {
				p := cosigntest.Payload(t, r.repo, d)
				sig := []byte(s.Sign(t, p))
				// Another base64 letter: still decodes, another signature.
				if sig[10] == 'A' {
					sig[10] = 'B'
				} else {
					sig[10] = 'A'
				}
				r.pushTagSignature(d, p, string(sig))
			},
		},
		{
			name: "signed payload that is not simple-signing JSON is invalid", kind: "ed25519", want: gates.SigInvalid, reason: "malformed: payload is not simple-signing JSON",
			push: func(t *testing.T, r *testRegistry, s *cosigntest.Signer, d v1.Hash) {
				p := []byte("not json")
				r.pushTagSignature(d, p, s.Sign(t, p))
			},
		},
		{
			name: "invalid signature at the tag and a valid referrer is ok", kind: "ecdsa", want: gates.SigOK, wherePrefx: "referrer ",
			push: func(t *testing.T, r *testRegistry, s *cosigntest.Signer, d v1.Hash) {
				p := cosigntest.Payload(t, r.repo, d)
				r.pushTagSignature(d, p, cosigntest.NewSignerOf(t, "ecdsa").Sign(t, p))
				r.pushReferrer(d, p, s.Sign(t, p))
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegistry(t)
			s := cosigntest.NewSignerOf(t, tc.kind)
			d := r.image("v1.33.6-k3s1", "linux", "amd64", "")
			tc.push(t, r, s, d)
			got, err := gates.VerifySignature(context.Background(), r.repo, d, s.Key(t), r.opts()...)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tc.want || !strings.Contains(got.Reason, tc.reason) || !strings.HasPrefix(got.Where, tc.wherePrefx) {
				t.Errorf("got %+v, want state %q, reason containing %q, where %q...", got, tc.want, tc.reason, tc.wherePrefx)
			}
		})
	}
}

func TestVerifySignatureUnreachableIsAnError(t *testing.T) {
	r := newRegistry(t)
	d := r.image("v1", "linux", "amd64", "")
	s := cosigntest.NewSignerOf(t, "ecdsa")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got, err := gates.VerifySignature(ctx, r.repo, d, s.Key(t), r.opts()...); err == nil {
		t.Fatalf("got %+v and no error with the context cancelled; a gate must not read as missing when the registry was not asked", got)
	}
}

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	pemOf := func(typ string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}) }
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p384DER, _ := x509.MarshalPKIXPublicKey(p384.Public())
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsaDER, _ := x509.MarshalPKIXPublicKey(rsaKey.Public())

	for _, tc := range []struct {
		name, file, err string
	}{
		{"ecdsa P-256 loads", cosigntest.NewSignerOf(t, "ecdsa").PubFile, ""},
		{"ed25519 loads", cosigntest.NewSignerOf(t, "ed25519").PubFile, ""},
		{"a file with a certificate first is refused", write("cert.pem", pemOf("CERTIFICATE", []byte("x"))), `PEM block is "CERTIFICATE"`},
		{"P-384 is refused", write("p384.pub", pemOf("PUBLIC KEY", p384DER)), "ECDSA curve P-384: want an ECDSA P-256 or Ed25519 public key"},
		{"RSA is refused", write("rsa.pub", pemOf("PUBLIC KEY", rsaDER)), "*rsa.PublicKey: want an ECDSA P-256 or Ed25519"},
		{"private key is refused", write("cosign.key", pemOf("ENCRYPTED SIGSTORE PRIVATE KEY", []byte("x"))), `PEM block is "ENCRYPTED SIGSTORE PRIVATE KEY", want "PUBLIC KEY"`},
		{"not PEM is refused", write("junk.pub", []byte("hello")), "no PEM block found"},
		{"garbage DER is refused", write("bad.pub", pemOf("PUBLIC KEY", []byte("xx"))), "parsing public key"},
		{"absent file is refused", filepath.Join(dir, "absent.pub"), "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := gates.LoadKey(tc.file)
			if tc.err == "" {
				if err != nil || k.File != tc.file || len(k.ID()) != 64 {
					t.Fatalf("LoadKey = %+v, %v", k, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("LoadKey(%s) succeeded, want error %q", tc.file, tc.err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.err) || !strings.Contains(msg, tc.file) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming %s and containing %q", msg, tc.file, tc.err)
			}
		})
	}
}
