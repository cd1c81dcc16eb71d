package server

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestSignInInTheBrowser: in Debian's chromium, a person signs in at a
// real OpenID provider, pins a channel through the page (no token asked),
// sees themself in its history, and signs out.
func TestSignInInTheBrowser(t *testing.T) {
	e := startSignIn(t, nil)
	b := newBrowser(t)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	b.do(t, "sign in at the provider",
		chromedp.Navigate(e.base+"/ui/channels/v1.33"),
		chromedp.WaitVisible(css("#sign-in")),
		chromedp.Click(css("#sign-in")),
		chromedp.WaitVisible(css("#username")),
		chromedp.SendKeys(css("#username"), "test-user@127.0.0.1"),
		chromedp.SendKeys(css("#password"), "verysecure"),
		chromedp.Click(css("button[type=submit]")),
		chromedp.WaitVisible(css("#who")),
	)
	if who := b.text(t, "#who"); who != "release.engineer@example.com" {
		t.Errorf("signed in as %q", who)
	}
	b.do(t, "open v1.33 and pin", chromedp.Navigate(e.base+"/ui/channels/v1.33"), chromedp.WaitVisible(css("#pin-form")),
		chromedp.SendKeys(css("#pin-version"), "v1.33.5+k3s1"),
		chromedp.SendKeys(css("#pin-reason"), "signed in with OIDC"),
		chromedp.Click(css("#pin-form button[type=submit]")),
	)
	b.waitFor(t, "the pin in the history", `(document.querySelector("#history") || {}).textContent?.includes("signed in with OIDC")`, 15*time.Second)
	if h := b.text(t, "#history"); !strings.Contains(h, "release.engineer@example.com") {
		t.Errorf("history does not name the person: %q", h)
	}
	b.screenshot(t, "signed-in")
	b.do(t, "sign out", chromedp.Click(css("#whoami button")), chromedp.WaitVisible(css("#sign-in")))
}
