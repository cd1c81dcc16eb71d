package server

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
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
	pf.round() // the leader's evidence pass
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
