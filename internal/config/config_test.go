package config

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tidemark-dev/tidemark/indexer"
	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// Regexps, constraints and parsers have no useful ==; they are equal when
// they were written the same way.
var cmpOpts = cmp.Options{
	cmp.Comparer(func(a, b *regexp.Regexp) bool {
		return (a == nil) == (b == nil) && (a == nil || a.String() == b.String())
	}),
	cmp.Comparer(func(a, b *semver.Constraints) bool {
		return (a == nil) == (b == nil) && (a == nil || a.String() == b.String())
	}),
	cmp.Comparer(func(a, b *resolver.Parser) bool {
		return (a == nil) == (b == nil) && (a == nil || a.Scheme() == b.Scheme())
	}),
	cmpopts.EquateEmpty(),
	// Password is a func; the tests call it instead.
	cmpopts.IgnoreFields(indexer.Source{}, "Password"),
	cmpopts.IgnoreUnexported(Config{}),
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func mustParser(t *testing.T, s resolver.Scheme, build string) *resolver.Parser {
	t.Helper()
	p, err := resolver.NewParser(s, build)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseAppliesDefaults(t *testing.T) {
	yaml := base + `channels:
  - name: released
    source: juju
  - name: beta
    source: juju
    stream: develop
    builds: true
    include: '^3\.'
    exclude: '-beta1$'
    constraint: '>= 3.0'
`
	cfg, err := Parse("t.yaml", []byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		File:        "t.yaml",
		Listen:      ":8080",
		AccessLog:   "sample",
		ReadTimeout: 30 * time.Second, DatabaseTimeout: 5 * time.Second,
		Registries:   map[string]Registry{"docker.io": {RateLimit: 10}},
		Fleet:        Fleet{Retention: DefaultRetention, ActiveWindow: DefaultActiveWindow, StuckAfter: DefaultStuckAfter, NewClustersPerMinute: DefaultNewClustersPerMinute, MaxClusters: DefaultMaxClusters},
		Limits:       Limits{MaxConnections: DefaultMaxConnections, MaxConnectionsPerAddress: DefaultMaxConnectionsPerAddress, MaxConnectionsPerNetwork: DefaultMaxConnectionsPerNetwork, IdleTimeout: DefaultIdleTimeout},
		Webhooks:     Webhooks{MaxPending: indexer.DefaultMaxPending},
		RegistryView: RegistryView{Auth: DefaultRegistryViewAuth, Blobs: DefaultRegistryViewBlobs},
		Sources: []Source{{
			Source: indexer.Source{
				Source:   catalog.Source{Name: "juju", Image: "docker.io/jujusolutions/jujud-operator", Parser: mustParser(t, resolver.SchemeJuju, "")},
				Interval: 15 * time.Minute, Concurrency: 8, Timeout: 30 * time.Second, Recheck: 24 * time.Hour,
			},
			Scheme: resolver.SchemeJuju,
		}, {
			Source: indexer.Source{
				Source:   catalog.Source{Name: "k3s", Image: "docker.io/rancher/k3s-upgrade", Parser: mustParser(t, resolver.SchemeSemver, `k3s(\d+)`)},
				Interval: 15 * time.Minute, Concurrency: 8, Timeout: 30 * time.Second, Recheck: 24 * time.Hour,
			},
			Scheme: resolver.SchemeSemver,
			Build:  `k3s(\d+)`,
		}},
		Channels: []catalog.Channel{
			{Name: "released", Source: "juju", Stream: resolver.Released},
			{
				Name: "beta", Source: "juju", Stream: resolver.Devel, Builds: true,
				Include:        regexp.MustCompile(`^3\.`),
				Exclude:        regexp.MustCompile(`-beta1$`),
				Constraint:     testutil.Constraint(t, ">= 3.0"),
				ConstraintText: ">= 3.0",
			},
		},
	}
	if diff := cmp.Diff(want, cfg, cmpOpts); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

func TestParseReadsEverySourceKey(t *testing.T) {
	yaml := `sources:
  - name: private
    image: localhost:5000/team/app
    scheme: semver
    interval: 30s
    exclude: '\.sig$'
    insecure: true
    concurrency: 2
    timeout: 5s
    recheck: 6h
    username: robot
    password_env: APP_REGISTRY_PASSWORD
    labels: {alpha: devel, rc: testing}
    cluster_api: true
registries:
  localhost:5000: {rate_limit: 0}
  docker.io: {rate_limit: 2.5}
`
	cfg, err := Parse("t.yaml", []byte(yaml), env(map[string]string{"APP_REGISTRY_PASSWORD": "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	want := Source{
		Source: indexer.Source{
			Source: catalog.Source{
				Name: "private", Image: "localhost:5000/team/app", Parser: mustParser(t, resolver.SchemeSemver, ""),
				Labels: resolver.Labels{"": resolver.Released, "rc": resolver.Testing, "beta": resolver.Devel, "alpha": resolver.Devel},
			},
			Interval: 30 * time.Second, Exclude: regexp.MustCompile(`\.sig$`),
			Insecure: true, Concurrency: 2, Timeout: 5 * time.Second, Recheck: 6 * time.Hour, Username: "robot",
		},
		Scheme: resolver.SchemeSemver, PasswordEnv: "APP_REGISTRY_PASSWORD", ClusterAPI: true,
	}
	if diff := cmp.Diff([]Source{want}, cfg.Sources, cmpOpts); diff != "" {
		t.Errorf("source (-want +got):\n%s", diff)
	}
	wantReg := map[string]Registry{"localhost:5000": {}, "docker.io": {RateLimit: 2.5}}
	if diff := cmp.Diff(wantReg, cfg.Registries); diff != "" {
		t.Errorf("registries (-want +got):\n%s", diff)
	}
	if got := cfg.ClusterAPISources(); len(got) != 1 || got[0] != "private" {
		t.Errorf("ClusterAPISources = %v, want [private]", got)
	}
	if got, err := cfg.IndexerSources()[0].Password(); err != nil || got != "s3cret" {
		t.Errorf("password = %q, %v; want s3cret", got, err)
	}
}

func TestRecheckZeroIsNever(t *testing.T) {
	cfg, err := Parse("t.yaml", []byte("sources: [{name: a, image: docker.io/a/b, scheme: juju, recheck: 0}]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Sources[0].Recheck; got >= 0 {
		t.Errorf("recheck: 0 gives Recheck %v, want < 0 (the indexer's never)", got)
	}
}

func TestPasswordFileIsReadAtUseTime(t *testing.T) {
	file := t.TempDir() + "/pw"
	cfg, err := Parse("t.yaml", []byte("sources: [{name: a, image: docker.io/a/b, scheme: juju, username: u, password_file: '"+file+"'}]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pw := cfg.Sources[0].Password
	if pw == nil {
		t.Fatal("password_file: no password func")
	}
	if _, err := pw(); err == nil {
		t.Fatal("missing password file: want an error")
	}
	if err := os.WriteFile(file, []byte("rotated\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := pw(); err != nil || got != "rotated" {
		t.Errorf("password = %q, %v; want rotated", got, err)
	}
	cfg, err = Parse("t.yaml", []byte("sources: [{name: a, image: docker.io/a/b, scheme: juju}]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Sources[0].Password != nil {
		t.Error("a source without password keys has a password func")
	}
}

func TestEnvOverridesTheFile(t *testing.T) {
	yaml := "listen: ':9000'\ndatabase_url: postgres://file/db\nexternal_url: https://tm.example.com/\n" +
		"sources:\n  - name: k3s\n    image: rancher/k3s-upgrade\n    scheme: semver\n"
	tests := []struct {
		name          string
		env           map[string]string
		listen, dbURL string
	}{
		{"file values without env", nil, ":9000", "postgres://file/db"},
		{"TIDEMARK_LISTEN wins", map[string]string{"TIDEMARK_LISTEN": "127.0.0.1:7000"}, "127.0.0.1:7000", "postgres://file/db"},
		{"DATABASE_URL wins", map[string]string{"DATABASE_URL": "postgres://env/db"}, ":9000", "postgres://env/db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("t.yaml", []byte(yaml), env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Listen != tt.listen || cfg.DatabaseURL != tt.dbURL {
				t.Errorf("listen, database_url = %q, %q; want %q, %q", cfg.Listen, cfg.DatabaseURL, tt.listen, tt.dbURL)
			}
			if cfg.ExternalURL != "https://tm.example.com" {
				t.Errorf("external_url = %q; want the trailing / trimmed", cfg.ExternalURL)
			}
		})
	}
	t.Run("bad TIDEMARK_LISTEN is a problem without a line", func(t *testing.T) {
		_, err := Parse("t.yaml", []byte(yaml), env(map[string]string{"TIDEMARK_LISTEN": "nope"}))
		want := `t.yaml: TIDEMARK_LISTEN: want host:port like ":8080", got "nope"`
		if err == nil || err.Error() != want {
			t.Errorf("got %v, want %s", err, want)
		}
	})
	t.Run("a port out of range says so, not that the format is wrong", func(t *testing.T) {
		_, err := Parse("t.yaml", []byte(yaml), env(map[string]string{"TIDEMARK_LISTEN": "127.0.0.1:99999"}))
		want := `t.yaml: TIDEMARK_LISTEN: port "99999" of "127.0.0.1:99999" is not a port number (0-65535)`
		if err == nil || err.Error() != want {
			t.Errorf("got %v, want %s", err, want)
		}
	})
}

// The channelserver files must load as they are once a defaults block and a
// source are put in front of them.
func TestChannelserverFixturesLoad(t *testing.T) {
	tests := []struct {
		file, build, redirect, stable string
		channels                      int
	}{
		{"k3s-channel.yaml", `k3s(\d+)`, "https://github.com/k3s-io/k3s/releases/tag/", "v1.21.2+k3s1", 12},
		{"rke2-channels.yaml", `rke2r(\d+)`, "https://github.com/rancher/rke2/releases/tag/", "v1.35.7+rke2r1", 22},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			fixture, err := os.ReadFile("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			head := "defaults: {source: k3s, stream: testing}\nsources:\n" +
				"  - name: k3s\n    image: docker.io/rancher/k3s-upgrade\n    scheme: semver\n    build: '" + tt.build + "'\n"
			cfg, err := Parse(tt.file, append([]byte(head), fixture...), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Channels) != tt.channels {
				t.Errorf("%d channels, want %d", len(cfg.Channels), tt.channels)
			}
			for _, c := range cfg.Channels {
				if c.Source != "k3s" || c.Stream != resolver.Testing || c.Redirect != tt.redirect {
					t.Errorf("channel %q: source, stream, redirect = %q, %v, %q; want k3s, testing, %q", c.Name, c.Source, c.Stream, c.Redirect, tt.redirect)
				}
			}
			if got := cfg.Channels[0]; got.Name != "stable" || got.Latest != tt.stable {
				t.Errorf("first channel %q latest %q; want stable %q", got.Name, got.Latest, tt.stable)
			}
			if latest := cfg.Channels[1]; latest.Include.String() != ".*" || !latest.Exclude.MatchString("v1.21.0-rc1+k3s1") {
				t.Errorf("channel latest: include %v exclude %v", latest.Include, latest.Exclude)
			}
			if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "ignoring channelserver keys github") {
				t.Errorf("warnings = %q; want one line about github", cfg.Warnings)
			}
		})
	}
}

func TestExampleConfigLoads(t *testing.T) {
	cfg, err := Load("../../deploy/examples/tidemark.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cfg.Channels {
		names = append(names, c.Name)
	}
	want := []string{"released", "proposed", "devel", "2.9", "3.6", "stable", "latest", "testing", "v1.31", "v1.32", "v1.33", "v1.34", "stepwise"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("channels (-want +got):\n%s", diff)
	}
	if len(cfg.Sources) != 2 || len(cfg.Warnings) != 0 {
		t.Errorf("%d sources, warnings %q; want 2 and none", len(cfg.Sources), cfg.Warnings)
	}
}

// Every configuration shipped under deploy/ must load: they are what
// `make run`, the Kubernetes base and the docs point people at.
func TestDeployedConfigsLoad(t *testing.T) {
	tests := []struct {
		file     string
		channels int
		warnings int
	}{
		{"../../deploy/kubernetes/tidemark.yaml", 12, 0},
		{"../../deploy/examples/tidemark-channelserver-import.yaml", 12, 1},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			cfg, err := Load(tt.file, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Channels) != tt.channels || len(cfg.Warnings) != tt.warnings {
				t.Errorf("%d channels, warnings %q; want %d channels, %d warnings", len(cfg.Channels), cfg.Warnings, tt.channels, tt.warnings)
			}
		})
	}
}

// TestEmptyConfigurationIsRefused: a file that declares nothing would
// serve nothing while /readyz says ready.
func TestEmptyConfigurationIsRefused(t *testing.T) {
	for _, data := range []string{"", "# nothing yet\n", "listen: ':8080'\n", "sources: []\nchannels: []\n"} {
		_, err := Parse("t.yaml", []byte(data), nil)
		if want := "t.yaml: no sources and no channels: nothing to serve (is this the right file?)"; err == nil || err.Error() != want {
			t.Errorf("Parse(%q) = %v, want %q", data, err, want)
		}
	}
}

func TestLoadNamesAMissingFile(t *testing.T) {
	_, err := Load("testdata/nope.yaml", nil)
	if err == nil || !strings.Contains(err.Error(), "testdata/nope.yaml") {
		t.Errorf("got %v, want an error naming the file", err)
	}
}

func TestSameSourcesComparesSourcesAndRegistriesAsWritten(t *testing.T) {
	const running = `sources:
  - name: a   # a comment
    image: docker.io/a/b
    scheme: juju
registries:
  docker.io: {rate_limit: 5}
channels:
  - {name: c, source: a}
`
	tests := []struct {
		name, next string
		same       bool
	}{
		{"a channel changed", strings.Replace(running, "name: c", "name: d", 1), true},
		{"comments, key order and style", "sources: [{scheme: juju, image: docker.io/a/b, name: a}]\n" +
			"registries: {docker.io: {rate_limit: 5}}\nchannels: [{name: c, source: a}]\n", true},
		// Any source key, including ones added after this test was written.
		{"recheck added", strings.Replace(running, "scheme: juju", "scheme: juju\n    recheck: 1h", 1), false},
		{"interval added", strings.Replace(running, "scheme: juju", "scheme: juju\n    interval: 1h", 1), false},
		{"image changed", strings.Replace(running, "a/b", "a/c", 1), false},
		{"rate limit changed", strings.Replace(running, "rate_limit: 5", "rate_limit: 6", 1), false},
		{"registries removed", strings.Replace(running, "registries:\n  docker.io: {rate_limit: 5}\n", "", 1), false},
	}
	old, err := Parse("t.yaml", []byte(running), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, err := Parse("t.yaml", []byte(tt.next), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := next.SameSources(old); got != tt.same {
				t.Errorf("SameSources = %v, want %v", got, tt.same)
			}
		})
	}
}

func TestParseReadsWebhooksAndNotify(t *testing.T) {
	cfg, err := Parse("t.yaml", []byte(`sources:
  - name: k3s
    image: docker.io/rancher/k3s-upgrade
    scheme: semver
channels:
  - name: stable
    source: k3s
webhooks:
  github_secret_file: /run/secrets/github
  dockerhub_secret_file: /run/secrets/hub
notify:
  - name: ops
    url: https://hooks.example.com/tidemark
    secret_file: /run/secrets/ops
    channels: [stable]
  - name: chat
    url: https://hooks.slack.com/services/T/B/X
    kind: slack
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Webhooks{GitHubSecretFile: "/run/secrets/github", DockerHubSecretFile: "/run/secrets/hub", MaxPending: 1000}); cfg.Webhooks != want {
		t.Errorf("webhooks %+v, want %+v", cfg.Webhooks, want)
	}
	want := []Notify{
		{Name: "ops", URL: "https://hooks.example.com/tidemark", Kind: "webhook", SecretFile: "/run/secrets/ops", Channels: []string{"stable"}},
		{Name: "chat", URL: "https://hooks.slack.com/services/T/B/X", Kind: "slack"},
	}
	if d := cmp.Diff(want, cfg.Notify); d != "" {
		t.Errorf("notify (-want +got):\n%s", d)
	}
}

// TestANewOnlineKeyNeedsNoRestart: after tidemark tuf rotate-online the
// file names a new online key, which SIGHUP applies; a new expiry still
// needs a restart.
func TestANewOnlineKeyNeedsNoRestart(t *testing.T) {
	const running = "sources:\n  - {name: a, image: docker.io/a/b, scheme: juju}\ntuf: {online_key_file: /etc/tidemark/online.pem}\n"
	old, err := Parse("t.yaml", []byte(running), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		next string
		want []string
	}{
		{strings.Replace(running, "online.pem", "online-2.pem", 1), nil},
		{strings.Replace(running, "online.pem}", "online.pem, expires: {timestamp: 2h}}", 1), []string{"tuf"}},
	} {
		next, err := Parse("t.yaml", []byte(tt.next), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := next.RestartChanges(old); !slices.Equal(got, tt.want) {
			t.Errorf("%q: RestartChanges = %v, want %v", tt.next, got, tt.want)
		}
	}
}

func TestRestartChangesNamesWhatOnlyARestartApplies(t *testing.T) {
	const running = `listen: ":8080"
read_timeout: 30s
notify:
  - {name: ops, url: "https://hooks.example.com/a"}
sources:
  - {name: a, image: docker.io/a/b, scheme: juju}
channels:
  - {name: c, source: a}
`
	old, err := Parse("t.yaml", []byte(running), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, next string
		want       []string
	}{
		{"nothing", running, nil},
		{"a channel only", strings.Replace(running, "name: c", "name: d", 1), nil},
		{"listen and a timeout", strings.Replace(strings.Replace(running, ":8080", ":9090", 1), "30s", "45s", 1), []string{"listen", "read_timeout"}},
		{"an endpoint's URL", strings.Replace(running, "hooks.example.com/a", "hooks.example.com/b", 1), []string{"notify"}},
		{"fleet and access log added", running + "fleet: {retention: 7d}\naccess_log: all\n", []string{"access_log", "fleet"}},
		{"tuf added", running + "tuf: {online_key_file: /etc/tidemark/online.pem}\n", []string{"tuf"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			next, err := Parse("t.yaml", []byte(tt.next), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := next.RestartChanges(old); !slices.Equal(got, tt.want) {
				t.Errorf("RestartChanges = %v, want %v", got, tt.want)
			}
		})
	}
}
