package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestChangesPageApprovesInTheBrowser: a pin waiting for two approvals is
// listed on the changes page; a person approves it there with a token
// (the second approval applies it), and the channel page shows the pin.
// The channel page also names its window and its hold.
func TestChangesPageApprovesInTheBrowser(t *testing.T) {
	env := newPGEnv(t, Options{})
	srv, ts := env.governed(env.st)
	lead, err := env.st.CreateToken(context.Background(), "release-lead", []string{ScopePromote})
	if err != nil {
		t.Fatal(err)
	}
	res, body := send(t, http.MethodPut, ts.URL+"/api/v1/channels/v1.33/pin", env.tokens["ci-promote"], `{"version":"v1.33.5+k3s1","reason":"k3s2 regression"}`)
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("pending pin: %d %s", res.StatusCode, body)
	}
	id := decodeChange(t, body).ID
	if res, _ := send(t, http.MethodPost, ts.URL+fmt.Sprintf("/api/v1/changes/%d/approve", id), env.tokens["root"], ""); res.StatusCode != 200 {
		t.Fatalf("first approval: %d", res.StatusCode)
	}
	_, page := get(t, ts, "/ui/changes")
	if !strings.Contains(string(page), fmt.Sprintf(`<tr data-change="%d">`, id)) || !strings.Contains(string(page), "1 of 2") {
		t.Fatalf("changes page without the pending change:\n%.2000s", page)
	}

	b := newBrowser(t)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	row := fmt.Sprintf(`#pending-table tr[data-change="%d"]`, id)
	b.do(t, "open /ui/changes", chromedp.Navigate(ts.URL+"/ui/changes"), chromedp.WaitVisible(css(row+" form")))
	b.screenshot(t, "changes")
	b.do(t, "approve",
		chromedp.SendKeys(css(row+" input[name=reason]"), "read the changelog"),
		chromedp.Click(css(row+" button[data-api-path$=approve]")),
		chromedp.WaitVisible(css("#token-input")),
		chromedp.SendKeys(css("#token-input"), lead),
		chromedp.Click(css("#token-dialog button.primary")),
	)
	b.waitFor(t, "the change done", fmt.Sprintf(`(document.querySelector('#decided-table tr[data-change="%d"]') || {}).dataset?.state === "done"`, id), 15*time.Second)
	if err := srv.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.do(t, "open v1.33", chromedp.Navigate(ts.URL+"/ui/channels/v1.33"), chromedp.WaitVisible(css("#served")))
	if got := b.text(t, "#served"); !strings.Contains(got, "v1.33.5+k3s1") {
		t.Errorf("channel serves %q after the approvals", got)
	}
	_, page = get(t, ts, "/ui/channels/k3s-released")
	if !strings.Contains(string(page), `<dd id="windows">`) || !strings.Contains(string(page), "mon,tue,wed,thu,fri,sat,sun") {
		t.Errorf("channel page without its windows")
	}
}
