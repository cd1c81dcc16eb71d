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
	// On a desktop the graph's box is as wide as the graph and scrolls
	// neither way.
	if got := b.eval(t, `(() => { const w = document.querySelector(".graph-wrap"), s = document.querySelector("#graph-svg");
		return [w.scrollHeight > w.clientHeight ? "scrolls down" : "", w.getBoundingClientRect().width > s.getBoundingClientRect().width + 4 ? "wider than the graph" : ""].join(" ").trim(); })()`); got != "" {
		t.Errorf("the graph's box on a desktop: %s", got)
	}
	b.screenshot(t, "graph", "#graph")

	// On a phone, the hint to swipe is there for a graph wider than the
	// screen, never for one that fits.
	phone := chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)
	hint := `(() => { const h = document.querySelector(".graph-scroll-hint"); return h && getComputedStyle(h).display !== "none" ? "shown" : "hidden"; })()`
	b.do(t, "the wide graph on a phone", phone, chromedp.Navigate(ts.URL+"/ui/channels/k3s-released"))
	if got := b.eval(t, hint); got != "shown" {
		t.Errorf("a graph wider than a phone: the swipe hint is %s", got)
	}
	b.do(t, "a one-column graph on a phone", chromedp.Navigate(ts.URL+"/ui/channels/v1.33"))
	if n := b.eval(t, `String(document.querySelectorAll("#graph-svg text.minor").length)`); n != "1" {
		t.Fatalf("v1.33's graph has %s columns, want 1", n)
	}
	if got := b.eval(t, hint); got != "hidden" {
		t.Errorf("a one-column graph that fits a phone: the swipe hint is %s", got)
	}
	// The channel list's cards hold their labels: "Last pin or unpin" takes
	// two lines and must not run over the card's border.
	b.do(t, "the channel list on a phone", chromedp.Navigate(ts.URL+"/ui/"))
	if got := b.eval(t, `[...document.querySelectorAll("table.cards td[data-label]")].filter(td =>
		parseFloat(getComputedStyle(td, "::before").height) > td.getBoundingClientRect().height + 0.5).map(td => td.dataset.label).join(", ")`); got != "" {
		t.Errorf("on a phone these labels run out of their cells: %s", got)
	}
}
