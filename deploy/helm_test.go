package deploy

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	// stdout only; stderr is kept for failures (and checked for warnings
	// by TestHelmChartHasNoWarnings).
	var stderr strings.Builder
	cmd := exec.Command("helm", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out) + stderr.String(), err
	}
	return string(out), nil
}

// TestHelmChart lints and renders the chart with several value sets; every
// rendered object must pass the same strict shape check as the kustomize
// base, and the pods must be wired as the base's are.
func TestHelmChart(t *testing.T) {
	if out, err := helm(t, "lint", "--strict", "helm/tidemark"); err != nil {
		t.Fatalf("helm lint (.ci/run installs helm): %v\n%s", err, out)
	}
	tests := []struct {
		name      string
		set       []string
		wantKinds []string
		secret    string
		image     string
	}{
		{"defaults: CloudNativePG", nil,
			[]string{"ConfigMap", "Deployment", "Service", "ServiceAccount", "PodDisruptionBudget", "Cluster"},
			"t-db-app", "ghcr.io/tidemark-dev/tidemark:0.1.0"},
		{"existing secret, digest", []string{"database.existingSecret.name=pg", "database.existingSecret.key=url", "image.digest=sha256:" + strings.Repeat("a", 64)},
			[]string{"ConfigMap", "Deployment", "Service", "ServiceAccount", "PodDisruptionBudget"},
			"pg", "ghcr.io/tidemark-dev/tidemark@sha256:" + strings.Repeat("a", 64)},
		{"everything on", []string{"serviceMonitor.enabled=true", "prometheusRule.enabled=true", "ingress.enabled=true",
			"ingress.tlsSecret=tls", "ingress.className=nginx", "networkPolicy.enabled=true", "replicas=3", "image.tag=1.2.3"},
			[]string{"ConfigMap", "Deployment", "Service", "ServiceAccount", "PodDisruptionBudget", "Cluster",
				"ServiceMonitor", "PrometheusRule", "Ingress", "NetworkPolicy"},
			"t-db-app", "ghcr.io/tidemark-dev/tidemark:1.2.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"template", "t", "helm/tidemark"}
			for _, s := range tt.set {
				args = append(args, "--set", s)
			}
			out, err := helm(t, args...)
			if err != nil {
				t.Fatalf("helm template: %v\n%s", err, out)
			}
			objs, err := decodeAll([]byte(out))
			if err != nil {
				t.Fatalf("rendered chart: %v", err)
			}
			kinds := map[string]bool{}
			for _, o := range objs {
				kinds[o.Kind] = true
				if o.Kind != "Deployment" {
					continue
				}
				var d deployment
				o.as(t, &d)
				c := checkPod(t, d.Spec.Template.Spec)
				if c.Image != tt.image {
					t.Errorf("image %q, want %q", c.Image, tt.image)
				}
				if name, _ := databaseSecret(c); name != tt.secret {
					t.Errorf("DATABASE_URL from Secret %q, want %q", name, tt.secret)
				}
				if !selects(d.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels) {
					t.Error("Deployment selector does not match its pods")
				}
			}
			if len(kinds) != len(tt.wantKinds) {
				t.Errorf("rendered kinds %v, want %v", kinds, tt.wantKinds)
			}
			for _, k := range tt.wantKinds {
				if !kinds[k] {
					t.Errorf("no %s rendered", k)
				}
			}
		})
	}
}

// Values that would deploy something broken are refused at render time.
func TestHelmChartRefuses(t *testing.T) {
	for name, set := range map[string]string{
		"latest tag":  "image.tag=latest",
		"no database": "database.cnpg.enabled=false",
	} {
		t.Run(name, func(t *testing.T) {
			if out, err := helm(t, "template", "t", "helm/tidemark", "--set", set); err == nil {
				t.Errorf("helm template --set %s rendered:\n%.300s", set, out)
			}
		})
	}
}

// TestHelmChartShipsTheRulesAsAFile: the chart's rules are a real file (a
// symlink made every helm command warn, issue 25 item 12), kept equal to
// deploy/monitoring's, and helm says nothing on stderr.
func TestHelmChartShipsTheRulesAsAFile(t *testing.T) {
	fi, err := os.Lstat("helm/tidemark/files/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		t.Fatal("helm/tidemark/files/prometheusrule.yaml is a symlink; ship a copy")
	}
	chart, err := os.ReadFile("helm/tidemark/files/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := os.ReadFile("monitoring/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(chart) != string(rules) {
		t.Error("helm/tidemark/files/prometheusrule.yaml differs from monitoring/prometheusrule.yaml: cp monitoring/prometheusrule.yaml helm/tidemark/files/")
	}
	cmd := exec.Command("helm", "lint", "helm/tidemark")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm lint: %v\n%s", err, stderr.String())
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		t.Errorf("helm lint warns on stderr:\n%s", s)
	}
}
