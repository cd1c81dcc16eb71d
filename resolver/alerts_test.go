package resolver

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHaltsForNamesFiringLabelledAlertsOnly(t *testing.T) {
	got := HaltsFor([]Alert{
		{Status: "firing", Labels: map[string]string{"alertname": "CanaryDown", AlertChannelLabel: "stable"}, Annotations: map[string]string{"summary": " nodes NotReady "}},
		{Status: "resolved", Labels: map[string]string{"alertname": "Old", AlertChannelLabel: "stable"}},
		{Status: "firing", Labels: map[string]string{"alertname": "NodeDown"}},
		{Status: "firing", Labels: map[string]string{"alertname": "Bare", AlertChannelLabel: "edge"}},
	})
	want := []AlertHalt{
		{Channel: "stable", Alertname: "CanaryDown", Reason: "CanaryDown: nodes NotReady"},
		{Channel: "edge", Alertname: "Bare", Reason: "Bare"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("halts (-want +got):\n%s", d)
	}
}
