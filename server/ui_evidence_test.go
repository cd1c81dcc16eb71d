package server

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tidemark-dev/tidemark/server/evidenceview"
)

// TestConsoleShowsEvidenceAndWhyPromotionWaits: the candidate's page
// shows each version's told, adopted and stuck counts from the fleet's
// polls, and the promoting channel's page says what it waits for, then
// that a person's pin paused it; without JavaScript.
func TestConsoleShowsEvidenceAndWhyPromotionWaits(t *testing.T) {
	pf := newPromotionFleet(t, 0)
	for i := range 3 {
		pf.poll(fmt.Sprintf("c-%d", i), "v1.33.6-k3s2")
	}
	pf.flush()
	pf.clock = time.Now().Add(-5 * time.Minute)
	pf.round() // the leader's evidence pass: the first point of the chart
	ts := &httptest.Server{URL: pf.base}
	page := func(path string) string {
		t.Helper()
		res, body := get(t, ts, path)
		if res.StatusCode != 200 {
			t.Fatalf("GET %s: %d", path, res.StatusCode)
		}
		return html.UnescapeString(string(body))
	}
	text := page("/ui/channels/v1.33")
	// The caption says the configured fleet.stuck_after (2m here).
	if !strings.Contains(text, "how many still run an older one 2m after being told (stuck)") {
		t.Errorf("the evidence caption does not say fleet.stuck_after:\n%s", regexp.MustCompile(`(?s)<caption>.*?</caption>`).FindAllString(text, -1))
	}
	row := regexp.MustCompile(`(?s)<tr data-evidence-version="v1\.33\.6\+k3s2">.*?</tr>`).FindString(text)
	if row == "" {
		t.Fatalf("no evidence row for v1.33.6+k3s2 on v1.33's page:\n%.2000s", text)
	}
	for _, w := range []string{
		`<td data-label="Told" class="n">5</td>`,
		`<td data-label="Adopted" class="bar-cell reported"><span class="bar-line"><span class="n">3</span>`,
		`<rect class="fill" width="60" height="10"/>`, // 3 of 5 told
		`<td data-label="Stuck" class="bar-cell stuck"><span class="bar-line"><span class="n">0</span>`,
		`<td data-label="Halts" class="n">0</td>`,
	} {
		if !strings.Contains(row, w) {
			t.Errorf("v1.33.6+k3s2's evidence row has no %q:\n%s", w, row)
		}
	}
	if !strings.Contains(row, `class="adoption-chart"`) || !strings.Contains(row, `adopted 3 of 5 told, now 3 of 5; stuck 0, now 0</title>`) {
		t.Errorf("v1.33.6+k3s2's row has no adoption chart of one point:\n%s", row)
	}
	// A fourth cluster adopts; the next pass, minutes later, adds a point.
	pf.poll("c-3", "v1.33.6-k3s2")
	pf.flush()
	pf.clock = time.Now()
	pf.round()
	time.Sleep(evidenceview.Every + 100*time.Millisecond)
	text = page("/ui/channels/v1.33")
	row = regexp.MustCompile(`(?s)<tr data-evidence-version="v1\.33\.6\+k3s2">.*?</tr>`).FindString(text)
	adopted := regexp.MustCompile(`<polyline class="adopted" points="([^"]*)"/>`).FindStringSubmatch(row)
	if !strings.Contains(row, `adopted 3 of 5 told, now 4 of 5`) || adopted == nil || len(strings.Fields(adopted[1])) != 4 {
		t.Errorf("after a fourth adopter the chart is not a step up (3 then 4 of 5):\n%s", row)
	}

	// In a browser the chart has a size, its lines their styles, and at
	// phone width the section does not scroll sideways (screenshot:
	// docs/screenshots/evidence-*.png).
	b := newBrowser(t)
	b.do(t, "open v1.33's page", chromedp.Navigate(pf.base+"/ui/channels/v1.33"))
	chart := `document.querySelector('tr[data-evidence-version="v1.33.6+k3s2"] svg.adoption-chart')`
	if w := b.eval(t, `String(Math.round(`+chart+`.getBoundingClientRect().width))`); w == "0" {
		t.Errorf("the adoption chart renders %s px wide", w)
	}
	if s := b.eval(t, `getComputedStyle(`+chart+`.querySelector("polyline.stuck")).strokeDasharray`); !strings.Contains(s, "4") {
		t.Errorf("the stuck line's dash %q: not styled", s)
	}
	b.screenshot(t, "evidence", "#evidence")

	text = page("/ui/channels/stable-33")
	why := regexp.MustCompile(`<span id="promotion-why">([^<]*)</span>`).FindStringSubmatch(text)
	if why == nil || !strings.HasPrefix(why[1], "soak ") {
		t.Fatalf("stable-33's page does not say it waits for the soak: %v\n%.3000s", why, text)
	}
	if !strings.Contains(text, `Promotes itself to what <a href="/ui/channels/v1.33">v1.33</a> answers once its evidence there holds (soak 1h, 3 adopted, stuck at most 25%).`) {
		t.Errorf("stable-33's page does not state its policy")
	}

	pf.pin(http.MethodPut, "stable-33", `{"version":"v1.33.5+k3s1","reason":"hold it","rollback":true}`)
	if text = page("/ui/channels/stable-33"); !strings.Contains(text, `<span class="badge blocked">paused</span> paused: `) {
		t.Errorf("after a person's pin stable-33's page does not say promotion is paused")
	}
}
