package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// TestTokenCommands covers where the database URL comes from and what each
// mistake says; TestReleaseEngineerEndToEnd uses the tokens against a server.
func TestTokenCommands(t *testing.T) {
	if os.Getenv("DATABASE_URL") == "" {
		t.Fatal("set DATABASE_URL or run via make test")
	}
	dbURL := storetest.URL(t)
	dir := t.TempDir()
	withDB := filepath.Join(dir, "with-db.yaml")
	noDB := filepath.Join(dir, "no-db.yaml")
	for path, extra := range map[string]string{withDB: "database_url: \"" + dbURL + "\"\n", noDB: ""} {
		if err := os.WriteFile(path, []byte(extra+e2eConfig), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	onlyURL := &tmcli{t: t, env: map[string]string{"DATABASE_URL": dbURL}}
	nothing := &tmcli{t: t, env: map[string]string{}}

	tests := []struct {
		name   string
		c      *tmcli
		args   []string
		code   int
		stdout string // regexp-free: a prefix of stdout
		stderr string // a substring of stderr
	}{
		{"DATABASE_URL alone is enough", onlyURL, []string{"token", "create", "--name", "ci", "--scope", "promote,scan"}, 0, "tdm_", "shown this once"},
		{"a config file names the database", nothing, []string{"token", "create", "--config", withDB, "--name", "ops", "--scope", "admin", "--scope", "admin"}, 0, "tdm_", ""},
		{"TIDEMARK_CONFIG names the file", nothing.with("TIDEMARK_CONFIG", withDB), []string{"token", "list"}, 0, "NAME", ""},
		{"the read scope is one", onlyURL, []string{"token", "create", "--name", "reader", "--scope", "read"}, 0, "tdm_", ""},
		{"a taken name is refused", onlyURL, []string{"token", "create", "--name", "ci", "--scope", "scan"}, 1, "", "already exists"},
		{"an unknown scope is named", onlyURL, []string{"token", "create", "--name", "x", "--scope", "deploy"}, 1, "", `unknown scope "deploy"`},
		{"no scope", onlyURL, []string{"token", "create", "--name", "x"}, 1, "", "needs --scope"},
		{"no name", onlyURL, []string{"token", "create", "--scope", "scan"}, 1, "", "needs --name"},
		{"no database anywhere", nothing, []string{"token", "list"}, 1, "", "no database: pass --config FILE, or set TIDEMARK_CONFIG or DATABASE_URL"},
		{"a config without a database", nothing, []string{"token", "list", "--config", noDB}, 1, "", "no database: set database_url in"},
		{"revoke by flag", onlyURL, []string{"token", "revoke", "--name", "ops"}, 0, "", `token "ops" revoked`},
		{"revoke of an unknown name", onlyURL, []string{"token", "revoke", "nobody"}, 1, "", `no token named "nobody"`},
		{"revoke needs a name", onlyURL, []string{"token", "revoke"}, 1, "", "needs a name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.t = t
			code, out, errs := tt.c.run(tt.args...)
			if code != tt.code || !strings.HasPrefix(out, tt.stdout) || !strings.Contains(errs, tt.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout starting %q, stderr containing %q",
					code, out, errs, tt.code, tt.stdout, tt.stderr)
			}
			if tt.code != 0 && out != "" {
				t.Errorf("a failed command wrote to stdout: %q", out)
			}
		})
	}

	// What the database holds: hashes only, scopes as given, the revocation.
	st, err := store.Open(context.Background(), dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tokens, err := st.ListTokens(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tok := range tokens {
		got[tok.Name] = strings.Join(tok.Scopes, ",")
		if tok.Name == "ops" && tok.RevokedAt.IsZero() {
			t.Error("ops is not revoked")
		}
	}
	if len(got) != 3 || got["ci"] != "promote,scan" || got["ops"] != "admin" || got["reader"] != "read" {
		t.Errorf("tokens in the database: %v, want ci=promote,scan, ops=admin and reader=read", got)
	}
}
