package server

import (
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestChannelPageDrawsTheGraphAndRisks: the channel page draws its upgrade
// graph as SVG in the HTML itself (readable without JavaScript), marks the
// risky edges and lists them as text, and the source and channel pages
// list the source's risks. In the browser the graph renders with a size
// and its risky edges; the screenshot is docs/screenshots/graph-*.png.
func TestChannelPageDrawsTheGraphAndRisks(t *testing.T) {
	_, ts, _ := newTestServer(t, graphSnapshot(t), "")
	res, body := get(t, ts, "/ui/channels/k3s-released")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("channel page: %d", res.StatusCode)
	}
	page := html.UnescapeString(string(body))
	for _, want := range []string{`<svg class="graph" id="graph-svg"`, `class="edge risky"`, `data-from="v1.33.4+k3s1" data-to="v1.34.2+k3s2"`,
		`<li><span class="version">v1.33.4+k3s1</span> to <span class="version">v1.34.2+k3s2</span>: risky (EtcdMigration)</li>`,
		`data-risk="EtcdMigration"`, `data-risk="ProdIngress"`, `<text class="minor" x="`, `>1.34</text>`,
		`<dd id="view-repo"><code>` + strings.TrimPrefix(ts.URL, "http://") + `/channels/k3s-released</code>`} {
		if !strings.Contains(page, want) {
			t.Errorf("channel page lacks %q", want)
		}
	}
	if strings.Contains(page, `data-version="v1.32.10+k3s1"`) {
		t.Errorf("the blocked v1.32.10+k3s1 is drawn")
	}
	checkSelfContained(t, "/ui/channels/k3s-released", string(body), res.Header)
	if _, body := get(t, ts, "/ui/sources/k3s"); !strings.Contains(string(body), `data-risk="EtcdMigration"`) {
		t.Errorf("source page lacks the risks")
	}

	b := newBrowser(t)
	b.do(t, "open the channel page", chromedp.Navigate(ts.URL+"/ui/channels/k3s-released"))
	if w := b.eval(t, `String(Math.round(document.querySelector("#graph-svg").getBoundingClientRect().width))`); w == "0" {
		t.Errorf("the graph renders %s px wide", w)
	}
	if n := b.eval(t, `String(document.querySelectorAll("#graph-svg line.risky").length)`); n == "0" {
		t.Errorf("no risky edge drawn")
	}
	if s := b.eval(t, `getComputedStyle(document.querySelector("#graph-svg line.risky")).strokeDasharray`); !strings.Contains(s, "5") {
		t.Errorf("a risky edge's dash %q: not styled", s)
	}
	b.screenshot(t, "graph", "#graph")
}
