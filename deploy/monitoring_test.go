package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"

	"github.com/tidemark-dev/tidemark/store/storetest"
)

// ruleGroups returns monitoring/prometheusrule.yaml's spec.groups, after
// validating the object strictly.
func ruleGroups(t *testing.T) []byte { return ruleGroupsOf(t, "monitoring/prometheusrule.yaml") }

// ruleGroupsOf is ruleGroups of any PrometheusRule file.
func ruleGroupsOf(t *testing.T, file string) []byte {
	t.Helper()
	objs := decodeFile(t, file)
	if len(objs) != 1 || objs[0].Kind != "PrometheusRule" {
		t.Fatalf("%s: want one PrometheusRule", file)
	}
	var r struct {
		Spec json.RawMessage `json:"spec"`
	}
	objs[0].as(t, &r)
	out, err := yaml.JSONToYAML(r.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPromtoolChecksRules(t *testing.T) {
	for _, file := range []string{"monitoring/prometheusrule.yaml", "monitoring/rollout-alert.yaml"} {
		path := filepath.Join(t.TempDir(), "rules.yaml")
		if err := os.WriteFile(path, ruleGroupsOf(t, file), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("promtool", "check", "rules", path).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: promtool check rules (Debian: apt-get install prometheus): %v\n%s", file, err, out)
		}
	}
}

// TestRolloutAlertReachesTidemark: the example alert carries the label
// Tidemark halts by, and the example receiver routes that label to the
// Alertmanager route with a bearer token.
func TestRolloutAlertReachesTidemark(t *testing.T) {
	if rules := string(ruleGroupsOf(t, "monitoring/rollout-alert.yaml")); !strings.Contains(rules, "tidemark_channel:") {
		t.Errorf("monitoring/rollout-alert.yaml: no alert labelled tidemark_channel")
	}
	data, err := os.ReadFile("monitoring/alertmanager-receiver.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var am struct {
		Route struct {
			Routes []struct {
				Receiver string   `json:"receiver"`
				Matchers []string `json:"matchers"`
			} `json:"routes"`
		} `json:"route"`
		Receivers []struct {
			Name           string `json:"name"`
			WebhookConfigs []struct {
				URL        string `json:"url"`
				HTTPConfig struct {
					Authorization struct {
						Type            string `json:"type"`
						CredentialsFile string `json:"credentials_file"`
					} `json:"authorization"`
				} `json:"http_config"`
			} `json:"webhook_configs"`
		} `json:"receivers"`
	}
	if err := yaml.Unmarshal(data, &am); err != nil {
		t.Fatalf("alertmanager-receiver.yaml: %v", err)
	}
	if len(am.Route.Routes) != 1 || len(am.Receivers) != 1 || am.Route.Routes[0].Receiver != am.Receivers[0].Name ||
		!strings.Contains(strings.Join(am.Route.Routes[0].Matchers, ","), "tidemark_channel") {
		t.Fatalf("alertmanager-receiver.yaml: want one route on tidemark_channel to its one receiver: %+v", am)
	}
	for _, w := range am.Receivers[0].WebhookConfigs {
		if !strings.HasSuffix(w.URL, "/api/v1/alerts/alertmanager") || w.HTTPConfig.Authorization.Type != "Bearer" || w.HTTPConfig.Authorization.CredentialsFile == "" {
			t.Errorf("alertmanager-receiver.yaml: webhook %+v: want the alertmanager route with a bearer token file", w)
		}
	}
}

var metricName = regexp.MustCompile(`\btidemark_[a-z0-9_]+`)

// monitoredMetrics is every tidemark_ metric the rules and the dashboard name.
func monitoredMetrics(t *testing.T) map[string][]string {
	t.Helper()
	used := map[string][]string{}
	for _, m := range metricName.FindAllString(string(ruleGroups(t)), -1) {
		used[m] = append(used[m], "prometheusrule.yaml")
	}
	data, err := os.ReadFile("monitoring/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			names := metricName.FindAllString(q.Expr, -1)
			if len(names) == 0 {
				t.Errorf("dashboard panel %q: %q names no tidemark metric", p.Title, q.Expr)
			}
			for _, m := range names {
				used[m] = append(used[m], "dashboard panel "+p.Title)
			}
		}
	}
	return used
}

// TestMonitoringNamesExposedMetrics runs the real binary and checks every
// metric the rules and the dashboard query is on its /metrics: once as
// tidemark demo (an in-process registry, every feature on), once as
// tidemark serve with a minimal configuration (one source, one channel and
// one notification endpoint: no rollouts, gates, fleet or webhooks
// configured), where a rule matching nothing would go unnoticed (issue 25).
func TestMonitoringNamesExposedMetrics(t *testing.T) {
	used := monitoredMetrics(t)
	bin := filepath.Join(t.TempDir(), "tidemark")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/tidemark").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Run("demo", func(t *testing.T) {
		addr := freeAddr(t)
		checkExposed(t, used, addr, exec.Command(bin, "demo", "--listen", addr))
	})
	t.Run("a minimal serve configuration", func(t *testing.T) {
		reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
		defer reg.Close()
		host := strings.TrimPrefix(reg.URL, "http://")
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.ParseReference(host+"/app:v1.0.0", name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
		defer hook.Close()
		addr := freeAddr(t)
		cfg := filepath.Join(t.TempDir(), "tidemark.yaml")
		body := "listen: " + addr + "\nsources:\n  - {name: app, image: " + host + "/app, scheme: semver, insecure: true}\n" +
			"channels:\n  - {name: stable, source: app}\nnotify:\n  - {name: hook, url: " + hook.URL + "}\n"
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		checkExposed(t, used, addr, exec.Command(bin, "serve", "--config", cfg))
	})
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// checkExposed starts cmd on a fresh database and scrapes addr until every
// metric in used is on /metrics, or 60 s pass.
func checkExposed(t *testing.T, used map[string][]string, addr string, cmd *exec.Cmd) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd = exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+storetest.URL(t))
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()

	exposed := map[string]bool{}
	deadline := time.Now().Add(60 * time.Second)
	for !exposed["tidemark_indexer_scans_total"] || !exposed["tidemark_source_last_success_timestamp_seconds"] {
		if time.Now().After(deadline) {
			t.Fatalf("no scan metrics on /metrics after 60s; tidemark said:\n%s", logs.String())
		}
		time.Sleep(200 * time.Millisecond)
		exposed = scrape("http://" + addr + "/metrics")
	}
	// Request metrics appear once a request was served (the scrapes above);
	// the rollout metrics once the leader recorded the rollout channel's
	// baseline after its first snapshot: scrape until all are there.
	var missing []string
	for {
		exposed = scrape("http://" + addr + "/metrics")
		missing = missing[:0]
		for m, where := range used {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_count"), "_sum")
			if !exposed[m] && !exposed[base] {
				missing = append(missing, m+" (in "+strings.Join(where, ", ")+")")
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("monitoring names metrics /metrics does not expose:\n%s", strings.Join(missing, "\n"))
	}
}

// scrape returns the metric families /metrics declares (# TYPE lines).
func scrape(url string) map[string]bool {
	got := map[string]bool{}
	res, err := http.Get(url)
	if err != nil {
		return got
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			got[f[2]] = true
		}
	}
	return got
}
