package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tidemark-dev/tidemark/resolver"
)

// pubKeyFile writes a PEM public key of kind ("ecdsa" or "rsa").
func pubKeyFile(t *testing.T, kind string) string {
	t.Helper()
	var pub any
	switch kind {
	case "ecdsa":
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		pub = k.Public()
	case "rsa":
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		pub = k.Public()
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), kind+".pub")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestGatesAreReadOnSourcesAndChannels(t *testing.T) {
	key := pubKeyFile(t, "ecdsa")
	cfg, err := Parse("t.yaml", []byte(base+`    gates:
      platforms: [linux/amd64, linux/arm64]
      signature: {cosign_key_file: `+key+`}
      soak: 24h
channels:
  - {name: stable, source: k3s}
  - {name: edge, source: k3s, soak: 0s}
  - {name: slow, source: k3s, soak: 72h}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	src, _ := cfg.Source("k3s")
	g := src.Gates
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, g.Platforms); diff != "" || g.SignatureKeyFile != key || g.Soak != 24*time.Hour {
		t.Errorf("gates %+v", g)
	}
	if src.SignatureKey == nil || g.SignatureKeyID != src.SignatureKey.ID() || g.SignatureKeyID == "" {
		t.Errorf("key not parsed: %+v, id %q", src.SignatureKey, g.SignatureKeyID)
	}
	if rs := cfg.ResolverSources(); rs[1].Gates.SignatureKeyID != g.SignatureKeyID {
		t.Error("the resolver's source lacks the key's fingerprint")
	}
	if j, _ := cfg.Source("juju"); j.Gates.Enabled() {
		t.Errorf("a source without gates has %+v", j.Gates)
	}
	soaks := map[string]*time.Duration{}
	for _, c := range cfg.Channels {
		soaks[c.Name] = c.Soak
	}
	zero, slow := time.Duration(0), 72*time.Hour
	if diff := cmp.Diff(map[string]*time.Duration{"stable": nil, "edge": &zero, "slow": &slow}, soaks); diff != "" {
		t.Errorf("channel soaks (-want +got):\n%s", diff)
	}
}

func TestBadGatesAreOneLineEach(t *testing.T) {
	rsaKey := pubKeyFile(t, "rsa")
	for _, tc := range []struct {
		name, gates string
		want        string
	}{
		{"bad platform", "{platforms: [linux/amd64, linux]}", `t.yaml:9: source "k3s": gates: platforms: platform "linux": want os/arch or os/arch/variant`},
		{"unreadable key file", "{signature: {cosign_key_file: /nonexistent/cosign.pub}}",
			`t.yaml:9: source "k3s": gates: signature: cosign key: open /nonexistent/cosign.pub: no such file or directory`},
		{"a key of the wrong type", "{signature: {cosign_key_file: " + rsaKey + "}}",
			`t.yaml:9: source "k3s": gates: signature: cosign key ` + rsaKey + `: *rsa.PublicKey: want an ECDSA P-256 or Ed25519 public key`},
		{"signature without a key file", "{signature: {}}", `t.yaml:9: source "k3s": gates: signature: cosign_key_file: missing (the cosign public key, cosign.pub)`},
		{"negative soak", "{soak: -1h}", `t.yaml:9: source "k3s": gates: soak: want a duration like 24h, or 0 for none, got -1h0m0s`},
		{"unknown gate", "{sbom: true}", `t.yaml:9: source "k3s": gates: unknown key "sbom"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(base+"    gates: "+tc.gates+"\n"), nil)
			if err == nil || !errors.Is(err, resolver.ErrInvalid) {
				t.Fatalf("accepted, or not ErrInvalid: %v", err)
			}
			if diff := cmp.Diff([]string{tc.want}, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("error lines (-want +got):\n%s", diff)
			}
		})
	}
	_, err := Parse("t.yaml", []byte(base+"channels:\n  - {name: c, source: k3s, soak: -5m}\n"), nil)
	if err == nil || err.Error() != `t.yaml:10: channel "c": soak: want a duration like 24h, or 0 for none, got -5m0s` {
		t.Errorf("negative channel soak: %v", err)
	}
}
