package benchkit

import (
	"os"
	"testing"
)

func TestMetric(t *testing.T) {
	body := "# HELP x\ntidemark_connections_refused_total{reason=\"total\"} 19744\ntidemark_x 2.5\n"
	if v, ok := Metric(body, `tidemark_connections_refused_total{reason="total"}`); !ok || v != "19744" {
		t.Errorf("Metric = %q %v, want 19744", v, ok)
	}
	if _, ok := Metric(body, `tidemark_connections_refused_total{reason="address"}`); ok {
		t.Errorf("an absent series was found")
	}
	if f := MetricValue(body, "tidemark_x"); f != 2.5 {
		t.Errorf("MetricValue = %v, want 2.5", f)
	}
}

func TestPeakRSSOfThisProcess(t *testing.T) {
	if rss := PeakRSS(os.Getpid()); rss < 1<<20 {
		t.Errorf("PeakRSS of this test = %d bytes, want at least 1 MiB", rss)
	}
	if rss := PeakRSS(-1); rss != 0 {
		t.Errorf("PeakRSS of no process = %d, want 0", rss)
	}
}
