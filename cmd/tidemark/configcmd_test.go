package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark-dev/tidemark/internal/testutil"
)

// channelserverImport writes the k3s channel.yaml fixture (its one copy is
// in internal/config/testdata) as an operator would import it: the head in
// testdata/config/channelserver-head.yaml in front, the rest unchanged.
func channelserverImport(t *testing.T) string {
	t.Helper()
	head, err := os.ReadFile(filepath.Join("testdata", "config", "channelserver-head.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fixture, err := os.ReadFile(filepath.Join("..", "..", "internal", "config", "testdata", "k3s-channel.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "channelserver.yaml")
	if err := os.WriteFile(file, append(head, fixture...), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestConfigCheckGolden(t *testing.T) {
	imported := channelserverImport(t)
	tests := []struct {
		golden string
		args   []string
		env    map[string]string
		code   int
	}{
		{"example", []string{"config", "check", "../../deploy/examples/tidemark.yaml"}, nil, 0},
		{"channelserver-import", []string{"config", "check", "--config", imported},
			map[string]string{"TIDEMARK_LISTEN": "127.0.0.1:9090", "DATABASE_URL": "postgres://tidemark:s3cret@db:5432/tidemark?sslmode=require"}, 0},
		{"per-cluster", []string{"config", "check", "testdata/config/per-cluster.yaml"}, nil, 0},
		{"broken-every-problem", []string{"config", "check"},
			map[string]string{"TIDEMARK_CONFIG": "testdata/config/broken.yaml"}, 1},
		{"no-file", []string{"config", "check"}, nil, 1},
		{"missing-file", []string{"config", "check", "testdata/config/nope.yaml"}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			getenv := func(k string) string { return tt.env[k] }
			code := Main(context.Background(), tt.args, strings.NewReader(""), &stdout, &stderr, getenv)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			got := "--- stdout\n" + stdout.String() + "--- stderr\n" + stderr.String()
			got = strings.ReplaceAll(got, filepath.Dir(imported), "$TMPDIR")
			testutil.Golden(t, filepath.Join("testdata", "config", tt.golden+".golden"), []byte(got))
			if strings.Contains(got, "s3cret") {
				t.Error("the database password was printed")
			}
			if strings.Contains(got, "B0/x") {
				t.Error("a Slack webhook's token was printed")
			}
		})
	}
}

// TestAShortClientSecretStopsStartUp: config check and serve refuse an
// oidc client_secret_file that is empty or under 16 bytes, naming it; 16
// bytes pass.
func TestAShortClientSecretStopsStartUp(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		secret string
		code   int
	}{{"", 1}, {"fifteen-bytes!!", 1}, {"sixteen-bytes!!!", 0}} {
		secretFile := filepath.Join(dir, "secret")
		if err := os.WriteFile(secretFile, []byte(c.secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(dir, "tidemark.yaml")
		yaml := "external_url: https://tidemark.example.com\nsources:\n  - {name: k3s, image: docker.io/rancher/k3s-upgrade, scheme: semver}\n" +
			"oidc:\n  issuer: https://id.example.com\n  client_id: tidemark\n  client_secret_file: " + secretFile + "\n"
		if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"config", "check", cfg}, {"serve", "--config", cfg}} {
			if c.code == 0 && args[0] == "serve" {
				continue // would serve
			}
			var stdout, stderr bytes.Buffer
			getenv := func(k string) string {
				if k == "DATABASE_URL" {
					return "postgres://nobody@127.0.0.1:1/none"
				}
				return ""
			}
			code := Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr, getenv)
			if code != c.code || c.code != 0 && !strings.Contains(stderr.String(), secretFile) {
				t.Errorf("%v with a %d-byte secret: exit %d, want %d naming the file; stderr: %s", args, len(c.secret), code, c.code, stderr.String())
			}
		}
	}
}
