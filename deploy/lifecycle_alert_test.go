package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestExpiredVersionsAlertFiresAfterAnHour runs promtool's rule unit
// test on the shipped rules: clusters on an expired line for an hour fire
// TidemarkClustersOnExpiredVersions (once per source, though every replica
// exports the counts), and not before the hour or with none left.
func TestExpiredVersionsAlertFiresAfterAnHour(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), ruleGroupsOf(t, "monitoring/prometheusrule.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := `rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'tidemark_fleet_lifecycle_clusters{source="k3s",classification="expired",pod="a"}'
        values: '3x90'
      - series: 'tidemark_fleet_lifecycle_clusters{source="k3s",classification="expired",pod="b"}'
        values: '3x90'
      - series: 'tidemark_fleet_lifecycle_clusters{source="rke2",classification="expired",pod="a"}'
        values: '0x90'
    alert_rule_test:
      - eval_time: 50m
        alertname: TidemarkClustersOnExpiredVersions
        exp_alerts: []
      - eval_time: 61m
        alertname: TidemarkClustersOnExpiredVersions
        exp_alerts:
          - exp_labels: {severity: warning, source: k3s}
            exp_annotations:
              summary: "3 active clusters run an expired version of k3s"
              description: "GET /api/v1/fleet/clusters?classification=expired lists them and tidemark lifecycle k3s shows when each line ended; a channel with lifecycle: {upgrade_expired: true} moves them off one minor at a time, inside its windows."
`
	if err := os.WriteFile(filepath.Join(dir, "tests.yaml"), []byte(tests), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("promtool", "test", "rules", "tests.yaml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules (Debian: apt-get install prometheus): %v\n%s", err, out)
	}
}
