package config

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestPromotionDocsConfigLoads: the channel blocks docs/promotion.md shows
// load as written (with a k3s-upgrade source beside them) and mean what
// the page says of them.
func TestPromotionDocsConfigLoads(t *testing.T) {
	doc, err := os.ReadFile("../../docs/promotion.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(channels:\n.*?)```").FindAllSubmatch(doc, -1)
	if len(blocks) != 2 {
		t.Fatalf("docs/promotion.md: %d channel examples, want 2 (promotion, yank)", len(blocks))
	}
	src := "sources:\n  - {name: k3s-upgrade, image: docker.io/rancher/k3s-upgrade, scheme: semver, build: 'k3s(\\d+)'}\n"
	var chs []string
	for i, b := range blocks {
		cfg, err := Parse("promotion.md", []byte(src+string(b[1])), nil)
		if err != nil {
			t.Fatalf("docs/promotion.md example %d: %v", i+1, err)
		}
		for _, c := range cfg.Channels {
			chs = append(chs, c.Name)
			if p := c.Promote; p != nil && (p.From != "candidate" || p.Soak != 24*time.Hour || p.MinAdopted != 20 || p.MaxStuckRatio != 0.05) {
				t.Errorf("example %d: promote %+v", i+1, *p)
			}
			if y := c.Yank; y != nil && (y.MaxStuckRatio != 0.2 || y.MinTold != 10) {
				t.Errorf("example %d: yank %+v", i+1, *y)
			}
		}
	}
	if got := strings.Join(chs, " "); got != "candidate stable candidate" {
		t.Errorf("channels %q", got)
	}
}
