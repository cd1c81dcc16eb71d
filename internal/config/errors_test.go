package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tidemark-dev/tidemark/resolver"
)

// base is a valid head that error cases append channels or keys to.
const base = `sources:
  - name: juju
    image: docker.io/jujusolutions/jujud-operator
    scheme: juju
  - name: k3s
    image: docker.io/rancher/k3s-upgrade
    scheme: semver
    build: 'k3s(\d+)'
`

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // every line of Error(), exactly
	}{
		{"invalid YAML names its line", "listen: [\n", []string{
			"t.yaml:1:9: invalid YAML: sequence end token ']' not found"}},
		{"a bad indentation names its own line and column, not where its list began",
			"sources:\n  - name: a\n    image: x\n    scheme: semver\nchannels:\n  - name: b\n   source: a\n", []string{
				"t.yaml:7:4: invalid YAML: value is not allowed in this context"}},
		{"top level that is not a mapping", "- a\n", []string{
			`t.yaml:1: want a mapping of settings at the top, got a list`}},
		{"unknown top-level key", "listne: ':80'\n", []string{
			`t.yaml:1: unknown key "listne" (did you mean "listen"?)`}},
		{"duplicate key", "listen: ':80'\nlisten: ':81'\n", []string{
			`t.yaml:2: duplicate key "listen" (first on line 1)`}},
		{"bad listen address", "listen: '8080'\n", []string{
			`t.yaml:1: listen: want host:port like ":8080", got "8080"`}},
		{"relative external_url", "external_url: tidemark.example.com\n", []string{
			`t.yaml:1: external_url: want an absolute http(s) URL, got "tidemark.example.com"`}},
		{"unknown source key suggests the right spelling", base + "    passwordFile: /x\n", []string{
			`t.yaml:9: source "k3s": unknown key "passwordFile" (did you mean "password_file"?)`}},
		{"a typo gets a did you mean", "sources:\n  - name: k3s\n    image: rancher/k3s-upgrade\n    schema: semver\n" +
			"channels:\n  - {name: s, source: k3s, aprovals: 1}\n", []string{
			`t.yaml:2: source "k3s": scheme: missing (want juju or semver)`,
			`t.yaml:4: source "k3s": unknown key "schema" (did you mean "scheme"?)`,
			`t.yaml:6: channel "s": unknown key "aprovals" (did you mean "approvals"?)`}},
		{"source name that is not a slug", "sources:\n  - name: K3s\n    image: rancher/k3s-upgrade\n    scheme: semver\n", []string{
			`t.yaml:2: source "K3s": name: "K3s" is not a slug ([a-z0-9][a-z0-9._-]*)`}},
		{"source without name, image or scheme", "sources:\n  - interval: 1m\n", []string{
			`t.yaml:2: source #1: name: missing`,
			`t.yaml:2: source #1: image: missing`,
			`t.yaml:2: source #1: scheme: missing (want juju or semver)`}},
		{"bad image reference", "sources:\n  - name: a\n    image: 'docker.io/Rancher/k3s'\n    scheme: semver\n", []string{
			"t.yaml:3: source \"a\": image: repository can only contain the characters `abcdefghijklmnopqrstuvwxyz0123456789_-./`: Rancher/k3s"}},
		{"bad scheme", "sources:\n  - name: a\n    image: rancher/k3s\n    scheme: calver\n", []string{
			`t.yaml:4: source "a": scheme: unknown scheme "calver" (want juju or semver)`}},
		{"build pattern on juju", "sources:\n  - name: a\n    image: rancher/k3s\n    scheme: juju\n    build: 'b(\\d+)'\n", []string{
			"t.yaml:5: source \"a\": build: build pattern `b(\\d+)`: only the semver scheme takes one"}},
		{"build pattern without a group", "sources:\n  - name: a\n    image: rancher/k3s\n    scheme: semver\n    build: 'k3s\\d+'\n", []string{
			"t.yaml:5: source \"a\": build: `k3s\\d+` has no capture group for the build number, like `k3s(\\d+)`"}},
		{"interval that is not a duration", base + "    interval: 15\n", []string{
			`t.yaml:9: source "k3s": interval: want a duration like 15m, 30s or 30d, got "15"`}},
		{"settle without stepwise", base + "channels:\n  - name: c\n    source: k3s\n    settle: 30m\n", []string{
			`t.yaml:12: channel "c": settle: only a stepwise channel settles; add stepwise: true or remove settle`}},
		{"negative settle", base + "channels:\n  - name: c\n    source: k3s\n    stepwise: true\n    settle: -1m\n", []string{
			`t.yaml:13: channel "c": settle: want a duration >= 0, got -1m0s`}},
		{"rollout steps not ascending", base + "channels:\n  - name: c\n    source: k3s\n    rollout: {steps: [10, 5, 100], interval: 1h}\n", []string{
			`t.yaml:12: channel "c": rollout.steps: 5 after 10; want ascending percents`}},
		{"rollout step outside 1..100", base + "channels:\n  - name: c\n    source: k3s\n    rollout: {steps: [0, 100], interval: 1h}\n", []string{
			`t.yaml:12: channel "c": rollout.steps: 0 is not a percent in 1..100`}},
		{"rollout that never reaches 100", base + "channels:\n  - name: c\n    source: k3s\n    rollout: {steps: [1, 50], interval: 1h}\n", []string{
			`t.yaml:12: channel "c": rollout.steps: the last step is 50; want 100, so that the rollout completes`}},
		{"rollout interval zero", base + "channels:\n  - name: c\n    source: k3s\n    rollout: {steps: [100], interval: 0s}\n", []string{
			`t.yaml:12: channel "c": rollout.interval: want a duration > 0, got 0s`}},
		{"rollout without interval", base + "channels:\n  - name: c\n    source: k3s\n    rollout: {steps: [100]}\n", []string{
			`t.yaml:12: channel "c": rollout.interval: missing (how long each step lasts, e.g. 1h)`}},
		{"fleet retention that is not a duration", base + "fleet: {retention: 30 days}\n", []string{
			`t.yaml:9: fleet.retention: want a duration like 15m, 30s or 30d, got "30 days"`}},
		{"fleet active window longer than retention", base + "fleet:\n  retention: 1h\n  active_window: 2h\n", []string{
			`t.yaml:10: fleet: active_window 2h0m0s is longer than retention 1h0m0s; records would be purged while active`}},
		{"fleet stuck_after zero", base + "fleet:\n  stuck_after: 0s\n", []string{
			`t.yaml:10: fleet.stuck_after: want a positive duration like 1h, got 0s`}},
		{"fleet evidence_networks not a network", base + "fleet:\n  evidence_networks: [10.0.0.0/8, office]\n", []string{
			`t.yaml:10: fleet.evidence_networks[1]: want an address or CIDR prefix like 10.0.0.0/8, got "office"`}},
		{"fleet enrollment misspelt", base + "fleet:\n  enrollment: requried\n", []string{
			`t.yaml:10: fleet.enrollment: want optional, required or off, got "requried" (did you mean "required"?)`}},
		{"fleet enrollment key misspelt", base + "fleet:\n  enrolment: optional\n", []string{
			`t.yaml:10: fleet: unknown key "enrolment" (did you mean "enrollment"?)`}},
		{"unknown fleet key", base + "fleet:\n  retension: 1d\n", []string{
			`t.yaml:10: fleet: unknown key "retension" (did you mean "retention"?)`}},
		{"interval under the minimum", base + "    interval: 5s\n", []string{
			`t.yaml:9: source "k3s": interval: 5s is shorter than the minimum 10s`}},
		{"bad source exclude regexp", base + "    exclude: '[a-'\n", []string{
			"t.yaml:9: source \"k3s\": exclude: missing closing ]: `[a-`"}},
		{"negative recheck", base + "    recheck: -1h\n", []string{
			`t.yaml:9: source "k3s": recheck: want a duration like 24h, or 0 for never, got -1h0m0s`}},
		{"access_log not a mode", "access_log: some\n" + base, []string{
			`t.yaml:1: access_log: want all, sample or off, got "some"`}},
		{"read_timeout zero", "read_timeout: 0s\n" + base, []string{
			`t.yaml:1: read_timeout: want a duration above zero like 30s, got 0s`}},
		{"database_timeout not a duration", "database_timeout: soon\n" + base, []string{
			`t.yaml:1: database_timeout: want a duration like 15m, 30s or 30d, got "soon"`}},
		{"window start equals end", base + "channels:\n  - name: stable\n    source: k3s\n    windows: [{days: [mon], start: \"09:00\", end: \"09:00\"}]\n", []string{
			`t.yaml:12: channel "stable": windows[0]: start and end are both 09:00: the window is empty`}},
		{"window unknown day and zone", base + "channels:\n  - name: stable\n    source: k3s\n    windows: [{days: [funday], start: \"09:00\", end: \"10:00\", timezone: Mars/Olympus}]\n", []string{
			`t.yaml:12: channel "stable": windows[0]: days: unknown day "funday" (want mon, tue, wed, thu, fri, sat or sun)`,
			`t.yaml:12: channel "stable": windows[0]: timezone: unknown time zone "Mars/Olympus" (an IANA name like Europe/Berlin)`}},
		{"windows overlap", base + "channels:\n  - name: stable\n    source: k3s\n    windows:\n      - {days: [mon], start: \"09:00\", end: \"17:00\", timezone: Europe/Berlin}\n      - {days: [mon], start: \"15:00\", end: \"18:00\", timezone: UTC}\n", []string{
			`t.yaml:14: channel "stable": windows[1] overlaps windows[0]`}},
		{"registry_view auth unknown", "registry_view: {auth: basic}\n" + base, []string{
			`t.yaml:1: registry_view: auth: want none or token, got "basic"`}},
		{"registry_view blobs unknown", "registry_view:\n  blobs: proxy\n" + base, []string{
			`t.yaml:2: registry_view: blobs: want stream or redirect, got "proxy"`}},
		{"concurrency zero", base + "    concurrency: 0\n", []string{
			`t.yaml:9: source "k3s": concurrency: want at least 1, got 0`}},
		{"insecure not a bool", base + "    insecure: maybe\n", []string{
			`t.yaml:9: source "k3s": insecure: want true or false, got "maybe"`}},
		{"both password keys", base + "    username: u\n    password_file: /f\n    password_env: P\n", []string{
			`t.yaml:11: source "k3s": password_env: give password_file or password_env, not both`}},
		{"bad label stream", base + "    labels: {alpha: risky}\n", []string{
			`t.yaml:9: source "k3s": labels: alpha: unknown stream "risky" (want released, proposed, devel or testing)`}},
		{"duplicate source name", base + "  - name: k3s\n    image: rancher/k3s\n    scheme: semver\n", []string{
			`t.yaml:9: source "k3s": name: duplicate source name (first on line 5)`}},
		{"negative rate limit", "registries:\n  ghcr.io: {rate_limit: -1}\n", []string{
			`t.yaml:2: registry "ghcr.io": rate_limit: want requests per second >= 0 (0 = unlimited), got -1`}},
		{"defaults naming an unknown source", base + "defaults: {source: rke2}\n", []string{
			`t.yaml:9: defaults: source: unknown source "rke2" (known: juju, k3s)`}},
		{"notify endpoint with a bad url, kind and channel", base + "channels:\n  - name: stable\n    source: k3s\nnotify:\n  - name: ops\n    url: hooks.example.com\n    kind: email\n    channels: [stable, edge]\n", []string{
			`t.yaml:14: notify "ops": url: want an absolute http(s) URL, got "hooks.example.com"`,
			`t.yaml:15: notify "ops": kind: "email": want webhook or slack`,
			`t.yaml:16: notify "ops": channels: unknown channel "edge" (channels: stable)`}},
		{"notify endpoint without name or url", base + "notify:\n  - kind: slack\n", []string{
			`t.yaml:10: notify #1: name: missing`,
			`t.yaml:10: notify #1: url: missing`}},
		{"unknown webhooks key", base + "webhooks:\n  github_secret: /x\n", []string{
			`t.yaml:10: webhooks: unknown key "github_secret"`}},
		{"channel with an unknown source", base + "channels:\n  - name: stable\n    source: rke2\n", []string{
			`t.yaml:11: channel "stable": source: unknown source "rke2" (known: juju, k3s)`}},
		{"channel with no source and no defaults", base + "channels:\n  - name: stable\n", []string{
			`t.yaml:10: channel "stable": source: missing (and no defaults.source)`}},
		{"bad channel regexp", base + "channels:\n  - name: v1.33\n    source: k3s\n    excludeRegexp: '(^[^+]+-'\n", []string{
			"t.yaml:12: channel \"v1.33\": excludeRegexp: missing closing ): `(^[^+]+-`"}},
		{"bad constraint", base + "channels:\n  - name: \"2.9\"\n    source: juju\n    constraint: '~two'\n", []string{
			`t.yaml:12: channel "2.9": constraint: improper constraint: "~two"`}},
		{"bad stream", base + "channels:\n  - name: edge\n    source: juju\n    stream: edge\n", []string{
			`t.yaml:12: channel "edge": stream: unknown stream "edge" (want released, proposed, devel or testing)`}},
		{"both spellings of include", base + "channels:\n  - name: x\n    source: k3s\n    latestRegexp: a\n    include: b\n", []string{
			`t.yaml:13: channel "x": include: same as latestRegexp; give one`}},
		{"unknown channel key", base + "channels:\n  - name: x\n    source: k3s\n    latest_regexp: a\n", []string{
			`t.yaml:12: channel "x": unknown key "latest_regexp" (did you mean "latestRegexp"?)`}},
		{"duplicate channel name", base + "channels:\n  - name: x\n    source: k3s\n  - name: x\n    source: juju\n", []string{
			`t.yaml:12: channel "x": name: duplicate channel name (first on line 10)`}},
		{"channel name that is not a path segment", base + "channels:\n  - name: a/b\n    source: k3s\n", []string{
			`t.yaml:10: channel "a/b": name: "a/b" is not a URL path segment ([A-Za-z0-9][A-Za-z0-9._-]*)`}},
		{"bad redirect", base + "channels:\n  - name: x\n    source: k3s\n    redirect: 'github.com/x'\n", []string{
			`t.yaml:12: channel "x": redirect: want an absolute http(s) URL or a path starting with /, got "github.com/x"`}},
		{"two YAML documents", "listen: ':1'\n---\nlisten: ':2'\n", []string{
			`t.yaml:2: more than one YAML document; put everything in one`}},
		{"two YAML documents and a bad first one", "listen: '1'\nsources: [~]\n---\nlisten: ':2'\n", []string{
			`t.yaml:1: listen: want host:port like ":8080", got "1"`,
			`t.yaml:2: source #1: empty entry`,
			`t.yaml:3: more than one YAML document; put everything in one`}},
		{"empty list entries", "sources: [~]\nchannels:\n  -\n", []string{
			`t.yaml:1: source #1: empty entry`,
			`t.yaml:3: channel #1: empty entry`}},
		{"registry key that is not a host", "registries:\n  'https://ghcr.io': {rate_limit: 1}\n", []string{
			`t.yaml:2: registry "https://ghcr.io": not a registry host (like docker.io or ghcr.io)`}},
		{"channels that are not a list", "channels: {stable: {}}\n", []string{
			`t.yaml:1: channels: want a list, got a mapping`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("t.yaml", []byte(tt.yaml), nil)
			if err == nil {
				t.Fatalf("Parse accepted it: %+v", cfg)
			}
			if diff := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("error lines (-want +got):\n%s", diff)
			}
			if !errors.Is(err, resolver.ErrInvalid) {
				t.Errorf("error does not wrap resolver.ErrInvalid: %v", err)
			}
		})
	}
}

func TestParseReportsEveryProblemAtOnce(t *testing.T) {
	yaml := base + `    interval: 1s
channels:
  - name: a
    source: nope
    excludeRegexp: '(x'
  - name: a
    source: k3s
    colour: blue
`
	_, err := Parse("tidemark.yaml", []byte(yaml), nil)
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("want *config.Error, got %T: %v", err, err)
	}
	want := []Problem{
		{Line: 9, Item: `source "k3s"`, Msg: "interval: 1s is shorter than the minimum 10s"},
		{Line: 12, Item: `channel "a"`, Msg: `source: unknown source "nope" (known: juju, k3s)`},
		{Line: 13, Item: `channel "a"`, Msg: "excludeRegexp: missing closing ): `(x`"},
		{Line: 14, Item: `channel "a"`, Msg: "name: duplicate channel name (first on line 11)"},
		{Line: 16, Item: `channel "a"`, Msg: `unknown key "colour"`},
	}
	if diff := cmp.Diff(want, ce.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != len(want) {
		t.Errorf("Error() has %d lines, want %d:\n%s", n, len(want), err)
	}
}

// TestLatestMustParse depends on resolver.Parser.Parse; the message after
// the prefix is the resolver's.
func TestLatestMustParse(t *testing.T) {
	yaml := base + "channels:\n  - name: stable\n    source: k3s\n    latest: 'v1.33.x'\n"
	_, err := Parse("t.yaml", []byte(yaml), nil)
	if err == nil {
		t.Fatal("Parse accepted latest v1.33.x")
	}
	if want := `t.yaml:12: channel "stable": latest: not a semver version: `; !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("got %q, want one line starting %q", err, want)
	}
}
