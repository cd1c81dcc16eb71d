package main

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// TestOutputIsTheAPIsJSON: every read command's -o json is the API's answer
// (nulls stay null: a channel without a constraint says null, not ""), and
// -o yaml the same document.
func TestOutputIsTheAPIsJSON(t *testing.T) {
	c := startServe(t)
	api := func(path string) any {
		t.Helper()
		res, err := http.Get(c.env["TIDEMARK_SERVER"] + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, b)
		}
		return v
	}
	cases := []struct {
		args []string
		path string
	}{
		{[]string{"channels"}, "/api/v1/channels"},
		{[]string{"channels", "latest"}, "/api/v1/channels/latest"},
		{[]string{"sources"}, "/api/v1/sources"},
		{[]string{"sources", "k3s"}, "/api/v1/sources/k3s"},
		{[]string{"versions", "k3s", "--stream", "proposed"}, "/api/v1/sources/k3s/versions?stream=proposed"},
		{[]string{"history", "latest"}, "/api/v1/channels/latest/history"},
		{[]string{"resolve", "--source", "k3s", "--current", "v1.32.9-k3s1"}, "/api/v1/resolve?source=k3s&current=v1.32.9-k3s1"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			want := api(tc.path)
			var gotJSON, gotYAML any
			out := c.must(append(tc.args, "-o", "json")...)
			if err := json.Unmarshal([]byte(out), &gotJSON); err != nil {
				t.Fatalf("-o json: %v\n%s", err, out)
			}
			if diff := cmp.Diff(want, gotJSON); diff != "" {
				t.Errorf("-o json differs from the API (-api +cli):\n%s", diff)
			}
			out = c.must(append(tc.args, "-o", "yaml")...)
			if err := yaml.Unmarshal([]byte(out), &gotYAML); err != nil {
				t.Fatalf("-o yaml: %v\n%s", err, out)
			}
			// YAML decodes integers as int; compare through JSON.
			b, _ := json.Marshal(gotYAML)
			_ = json.Unmarshal(b, &gotYAML)
			if diff := cmp.Diff(want, gotYAML); diff != "" {
				t.Errorf("-o yaml differs from the API (-api +cli):\n%s\n%s", diff, out)
			}
		})
	}
	if out := c.must("channels", "latest", "-o", "json"); !strings.Contains(out, `"constraint": null`) {
		t.Errorf("channels -o json: constraint is not null:\n%s", out)
	}
	if out := c.must("channels", "-o", "yaml"); !strings.Contains(out, "constraint: null") || !strings.Contains(out, `version: v1.33.6+k3s2`) {
		t.Errorf("channels -o yaml:\n%s", out)
	}
	if code, _, errs := c.run("channels", "-o", "xml"); code != 1 || !strings.Contains(errs, `--output "xml": want table, json or yaml`) {
		t.Errorf("channels -o xml: exit %d, %q", code, errs)
	}
}

// TestSourcesVersionsScanCommands: the tables people read, and scan's
// refusal carrying the server's reason.
func TestSourcesVersionsScanCommands(t *testing.T) {
	c := startServe(t)
	if out := c.must("sources"); !regexp.MustCompile(`(?m)^SOURCE\s+SCHEME\s+TAGS\s+UNPARSED\s+VERSIONS\s+LAST SCAN\s+OUTCOME\s+IMAGE\nk3s\s+semver\s+9\s+1\s+8\s+\S+\s+ok\s+docker.io/rancher/k3s-upgrade\n$`).MatchString(out) {
		t.Errorf("sources table:\n%s", out)
	}
	out := c.must("versions", "k3s")
	if !strings.HasPrefix(out, "VERSION") || !regexp.MustCompile(`(?m)^v1\.34\.0-rc1\+k3s1\s+v1\.34\.0-rc1-k3s1\s+proposed\s+no\s+sha256:`).MatchString(out) {
		t.Errorf("versions table:\n%s", out)
	}
	if code, _, errs := c.run("versions", "nope"); code != 1 || !strings.Contains(errs, "404:") {
		t.Errorf("versions of an unknown source: exit %d, %q", code, errs)
	}
	scanTok := strings.TrimSpace(c.must("token", "create", "--name", "scanner", "--scope", "scan"))
	code, _, errs := c.with("TIDEMARK_TOKEN", scanTok).run("scan", "k3s")
	if code != 1 || !strings.Contains(errs, "503:") || !strings.Contains(errs, "does not index") {
		t.Errorf("scan on serve --no-index: exit %d, %q", code, errs)
	}
	promoteTok := strings.TrimSpace(c.must("token", "create", "--name", "bot", "--scope", "promote"))
	bot := c.with("TIDEMARK_TOKEN", promoteTok)
	bot.must("block", "k3s", "v1.33.4+k3s1", "--reason", "bad")
	if out := bot.must("block", "k3s", "v1.33.4+k3s1", "--reason", "bad"); out != "k3s v1.33.4+k3s1: already blocked\n" {
		t.Errorf("second block printed %q", out)
	}
	c.must("token", "revoke", "bot")
	if _, _, errs := c.run("token", "revoke", "bot"); !strings.Contains(errs, `token "bot" was already revoked at `) {
		t.Errorf("second revoke said %q", errs)
	}
	if out := c.must("token", "list", "-o", "json"); !strings.Contains(out, `"revoked_at": "`) || !strings.Contains(out, `"revoked_at": null`) {
		t.Errorf("token list -o json:\n%s", out)
	}
}

func TestVersionCommand(t *testing.T) {
	c := &tmcli{t: t}
	line := regexp.MustCompile(`^tidemark \S+ \(commit \S+\)\n$`)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if out := c.must(args...); !line.MatchString(out) {
			t.Errorf("tidemark %s printed %q", args[0], out)
		}
	}
	if out := c.must("version", "-o", "json"); !regexp.MustCompile(`^\{\n  "version": "\S+",\n  "commit": "\S+"\n\}\n$`).MatchString(out) {
		t.Errorf("tidemark version -o json printed %q", out)
	}
	// Unset by ldflags: the toolchain's stamp, else dev.
	info := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}
	if v, c := buildVersion(info, true); v != "dev" || c != "0123456789ab-dirty" {
		t.Errorf("buildVersion from vcs info = %q, %q", v, c)
	}
	version, commit = "v1.2.3", "abc1234"
	t.Cleanup(func() { version, commit = "", "" })
	if v, c := buildVersion(info, true); v != "v1.2.3" || c != "abc1234" {
		t.Errorf("buildVersion with ldflags = %q, %q", v, c)
	}
}

func TestUnknownSubcommandFails(t *testing.T) {
	c := &tmcli{t: t}
	for _, args := range [][]string{{"rollout", "show", "x"}, {"token", "frob"}, {"config", "bogus"}} {
		code, _, errs := c.run(args...)
		if code != 1 || !strings.Contains(errs, args[0]+" "+args[1]+": unknown command; want ") {
			t.Errorf("tidemark %v: exit %d, stderr %q; want exit 1 naming the subcommands", args, code, errs)
		}
	}
}
