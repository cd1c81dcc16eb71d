package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// testRolloutInABrowser pauses and resumes "latest"'s rollout (seeded by
// seedRollout) through its page, in b, whose tab already holds a token:
// the state and the history follow, and an action the state refuses
// shows the API's 409 problem.
func testRolloutInABrowser(t *testing.T, env *pgEnv, b *browser, to string) {
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	base := env.ts.URL
	b.do(t, "open latest", chromedp.Navigate(base+"/ui/channels/latest"), chromedp.WaitVisible(css("#rollout-form")))
	for sel, want := range map[string]string{
		"#rollout-state":    "running",
		"#rollout-percent":  "10%",
		"#rollout-step":     "1 of 3 (steps 10%, 50%, 100%)",
		"#rollout-clusters": "2 clusters last served " + to + ", 3 last served " + rolloutFrom,
		"#rollout .rollout": "Rollout " + rolloutFrom + " → to " + to + ": 10% running",
	} {
		if got := b.text(t, sel); !strings.HasPrefix(got, want) {
			t.Errorf("%s reads %q, want it to start %q", sel, got, want)
		}
	}
	if got := b.eval(t, `String(document.querySelector("#rollout progress").value)`); got != "10" {
		t.Errorf("the bar's value is %s, want 10", got)
	}
	if got := b.eval(t, `document.querySelector("#rollout progress").labels.length + " " + document.querySelector("#rollout progress").getAttribute("aria-labelledby")`); got != "0 rollout-latest" {
		t.Errorf("the bar is named by %q, want the text beside it", got)
	}

	b.do(t, "resume a running rollout", chromedp.Click(css(`#rollout-form button[data-api-path$="/resume"]`)))
	b.waitFor(t, "the refusal", `document.querySelector("#rollout-form .form-status.error") !== null`, 10*time.Second)
	if got := b.text(t, "#rollout-form .form-status"); !strings.Contains(got, "is running: cannot resume it") {
		t.Errorf("the refused resume reads %q, want the 409 problem", got)
	}

	b.do(t, "pause", chromedp.SendKeys(css("#rollout-reason"), "canary error rate"),
		chromedp.Click(css(`#rollout-form button[data-api-path$="/pause"]`)))
	b.waitFor(t, "the pause in the history", `(document.querySelector("#history") || {}).textContent?.includes("canary error rate")`, 15*time.Second)
	if got := b.text(t, "#rollout-state"); got != "paused" {
		t.Errorf("state reads %q after the pause", got)
	}
	if got := b.text(t, "#rollout-next"); got != "none while paused" {
		t.Errorf("next step reads %q while paused", got)
	}
	if got, want := b.text(t, "#history li"), "ci-promote paused the rollout: "+rolloutFrom+" → "+to+" “canary error rate”"; !strings.Contains(got, want) {
		t.Errorf("newest history entry reads %q, want %q", got, want)
	}
	b.screenshot(t, "rollout")

	b.do(t, "resume", chromedp.SendKeys(css("#rollout-reason"), "error rate back to normal"),
		chromedp.Click(css(`#rollout-form button[data-api-path$="/resume"]`)))
	b.waitFor(t, "the resume in the history", `(document.querySelector("#history") || {}).textContent?.includes("error rate back to normal")`, 15*time.Second)
	if got := b.text(t, "#rollout-state"); got != "running" {
		t.Errorf("state reads %q after the resume", got)
	}
	if got := b.text(t, "#history li"); !strings.Contains(got, "ci-promote resumed the rollout") {
		t.Errorf("newest history entry reads %q", got)
	}
	ev, err := env.st.History(context.Background(), "latest")
	var actions []string
	for _, e := range ev {
		actions = append(actions, e.Action)
	}
	if err != nil || strings.Join(actions, " ") != "rollout-resume rollout-pause rollout-start" {
		t.Errorf("the store's history of latest: %v, %v", actions, err)
	}
}
