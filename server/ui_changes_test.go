package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tidemark-dev/tidemark/internal/governor"
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

// TestAPendingPinSaysSoInTheBrowser: on a channel needing approvals the
// page says so and lists its pending changes; a pin made in the page says
// that nothing changed yet and which change waits; "Last change" does not
// move. A frozen channel's page says that pins are refused.
func TestAPendingPinSaysSoInTheBrowser(t *testing.T) {
	env := newPGEnv(t, Options{})
	srv, ts := env.governed(env.st)
	_, before := get(t, ts, "/ui/channels/v1.33")
	if !strings.Contains(string(before), `<dd id="approvals">every pin and unpin waits for 2 approvals`) || !strings.Contains(string(before), `id="approvals-notice"`) {
		t.Fatalf("a channel needing approvals does not say so:\n%.3000s", before)
	}
	b := newBrowser(t)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	b.do(t, "open v1.33", chromedp.Navigate(ts.URL+"/ui/channels/v1.33"), chromedp.WaitVisible(css("#pin-form")))
	last := b.text(t, "#channel-facts")
	b.do(t, "pin",
		chromedp.SendKeys(css("#pin-version"), "v1.33.5+k3s1"),
		chromedp.SendKeys(css("#pin-reason"), "regression"),
		chromedp.Click(css("#pin-form button.primary")),
		chromedp.WaitVisible(css("#token-input")),
		chromedp.SendKeys(css("#token-input"), env.tokens["ci-promote"]),
		chromedp.Click(css("#token-dialog button.primary")),
	)
	b.waitFor(t, "the pending message", `(document.querySelector('#pin-form .form-status') || {}).textContent?.includes("waits for 2 approvals")`, 10*time.Second)
	if err := srv.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, after := get(t, ts, "/ui/channels/v1.33")
	if !strings.Contains(string(after), `<dd id="pending">`) || !strings.Contains(string(after), "0 of 2 approvals") {
		t.Errorf("the channel page does not list the pending pin:\n%.3000s", after)
	}
	lastChange := func(page string) string {
		i := strings.Index(page, "<dt>Last change</dt>")
		if i < 0 {
			return ""
		}
		return page[i : i+120]
	}
	if lastChange(string(after)) != lastChange(string(before)) {
		t.Errorf("Last change moved for a pending pin: %q -> %q (page text before: %q)", lastChange(string(before)), lastChange(string(after)), last)
	}

	freezeNow(t, ts, env.tokens["root"], "v1.32", "audit")
	governorTick(t, srv)
	if _, page := get(t, ts, "/ui/channels/v1.32"); !strings.Contains(string(page), `id="frozen-notice"`) || !strings.Contains(string(page), "pins and unpins are refused") {
		t.Errorf("a frozen channel's page does not say pins are refused")
	}
}

func governorTick(t *testing.T, srv *Server) {
	t.Helper()
	governor.Tick(context.Background(), srv.governorOpts())
	if err := srv.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
}
