package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark-dev/tidemark/store/storetest"
)

func TestMigrateCommand(t *testing.T) {
	empty := storetest.EmptyURL(t)
	fromConfig := storetest.EmptyURL(t)
	cfgFile := filepath.Join(t.TempDir(), "tidemark.yaml")
	cfgText := "database_url: " + strconv.Quote(fromConfig) + "\nsources:\n  - {name: s, image: 127.0.0.1:5000/s, scheme: semver, insecure: true}\n"
	if err := os.WriteFile(cfgFile, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	noEnv := func(string) string { return "" }
	tests := []struct {
		name     string
		args     []string
		getenv   func(string) string
		wantCode int
		wantErr  string
	}{
		{"flag migrates an empty database", []string{"migrate", "--database-url", empty}, noEnv, 0, ""},
		{"second run has nothing to do", []string{"migrate"}, func(k string) string {
			if k == "DATABASE_URL" {
				return empty
			}
			return ""
		}, 0, ""},
		{"config's database_url migrates", []string{"migrate", "--config", cfgFile}, noEnv, 0, ""},
		{"no database named fails", []string{"migrate"}, noEnv, 1, "no database: pass --config FILE, or set TIDEMARK_CONFIG or DATABASE_URL (or pass --database-url)"},
		{"unreachable database fails in one line", []string{"migrate", "--database-url", "postgres://u:pw@127.0.0.1:1/x"}, noEnv, 1, "127.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(context.Background(), tt.args, strings.NewReader(""), &out, &errb, tt.getenv)
			if code != tt.wantCode || !strings.Contains(errb.String(), tt.wantErr) {
				t.Fatalf("exit %d, stderr %q; want %d containing %q", code, errb.String(), tt.wantCode, tt.wantErr)
			}
			if strings.Contains(errb.String(), "pw@") {
				t.Errorf("stderr shows the password: %s", errb.String())
			}
		})
	}
}
