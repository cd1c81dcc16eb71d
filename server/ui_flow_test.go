package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/resolver"
)

// TestConsoleInABrowser drives the console in Debian's chromium against a
// server on a real Postgres: it reads what a person sees on each page, pins
// and unpins through the page (the token typed once), blocks a version,
// resolves, pauses and resumes a rollout, and watches the channel list
// follow a pin made elsewhere without a reload.
func TestConsoleInABrowser(t *testing.T) {
	env := newPGEnv(t, Options{})
	gateK3s(t, env)
	seedFleet(t, env)
	env.srv, env.ts, env.logs = env.serve(env.st, Options{Fleet: fleet.Options{Store: env.st}})
	rollTo := seedRollout(t, env)
	serveRollouts(t, env, true)
	b := newBrowser(t)
	base := env.ts.URL
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }

	t.Run("a browser at / lands on the channel list", func(t *testing.T) {
		b.do(t, "open /", chromedp.Navigate(base+"/"), chromedp.WaitVisible(css("#channels")))
		if loc := b.eval(t, `location.pathname`); loc != "/ui/" {
			t.Errorf("at %s, want /ui/", loc)
		}
		if n := b.eval(t, `String(document.querySelectorAll("#channel-rows tr").length)`); n != strconv.Itoa(len(k3sChannels())) {
			t.Errorf("%s channel rows, want %d", n, len(k3sChannels()))
		}
		for sel, want := range map[string]string{
			`#channel-rows tr[data-channel="v1.33"] td[data-label="Serves"]`:  "v1.33.6+k3s2",
			`#channel-rows tr[data-channel="stable"] td[data-label="Pinned"]`: "fixed",
			`#channel-rows tr[data-channel="v1.99"] td[data-label="Serves"]`:  "nothing",
			`#channel-rows tr[data-channel="v1.33"] td[data-label="Fleet"]`:   "4 clusters, 3 active",
			`#channel-rows tr[data-channel="stable"] td[data-label="Fleet"]`:  "1 cluster, 1 active",
			`#channel-rows tr[data-channel="latest"] .rollout`:                rolloutFrom + " → to " + rollTo + ": 10% running",
		} {
			if got := b.text(t, sel); !strings.Contains(got, want) {
				t.Errorf("%s reads %q, want %q in it", sel, got, want)
			}
		}
	})

	token := env.tokens["ci-promote"]
	t.Run("pin through the page, asked for the token once", func(t *testing.T) {
		b.do(t, "open v1.33", chromedp.Navigate(base+"/ui/channels/v1.33"), chromedp.WaitVisible(css("#pin-form")))
		b.do(t, "pin v1.33 to v1.33.5+k3s1",
			chromedp.SendKeys(css("#pin-version"), "v1.33.5+k3s1"),
			chromedp.SendKeys(css("#pin-reason"), "k3s2 breaks etcd"),
			chromedp.Click(css("#pin-form button[type=submit]")),
			chromedp.WaitVisible(css("#token-input")),
			chromedp.SendKeys(css("#token-input"), token),
			chromedp.Click(css("#token-dialog button.primary")),
		)
		b.waitFor(t, "the pin in the history", `(document.querySelector("#history") || {}).textContent?.includes("k3s2 breaks etcd")`, 15*time.Second)
		if got := b.text(t, "#served"); !strings.Contains(got, "v1.33.5+k3s1") {
			t.Errorf("serves %q after the pin, want v1.33.5+k3s1", got)
		}
		if got := b.text(t, "#pinned"); !strings.Contains(got, "pinned") {
			t.Errorf("pinned reads %q after the pin", got)
		}
		if got := b.text(t, "#history li"); !strings.Contains(got, "ci-promote pin: v1.33.6+k3s2 → v1.33.5+k3s1") {
			t.Errorf("newest history entry reads %q", got)
		}
		// The reloaded page says what the pin did, once.
		if got := b.text(t, "#flash"); got != "Pinned v1.33 to v1.33.5+k3s1." {
			t.Errorf("after the pin the page says %q, want what it did", got)
		}
		if got := b.eval(t, `(sessionStorage.getItem("tidemark.token") === `+jsString(token)+`) + " cookie=" + document.cookie`); got != "true cookie=" {
			t.Errorf("token kept in sessionStorage, no cookie: got %q", got)
		}
		ev, err := env.st.History(context.Background(), "v1.33")
		if err != nil || len(ev) != 1 || ev[0].Actor != "ci-promote" || ev[0].To != "v1.33.5+k3s1" {
			t.Errorf("the store's history of v1.33: %+v, %v", ev, err)
		}
	})

	t.Run("a refused pin shows the API's problem at the field", func(t *testing.T) {
		b.do(t, "pin v1.33 to a version that does not exist",
			chromedp.SendKeys(css("#pin-version"), "v9.9.9"),
			chromedp.Click(css("#pin-form button[type=submit]")),
		)
		b.waitFor(t, "the error", `document.querySelector("#pin-form .form-status.error") !== null`, 10*time.Second)
		if got := b.text(t, "#pin-form .form-status"); !strings.Contains(got, `version "v9.9.9" is not indexed`) {
			t.Errorf("error reads %q", got)
		}
		if got := b.eval(t, `document.querySelector("#pin-version").getAttribute("aria-invalid") || ""`); got != "true" {
			t.Errorf("version field aria-invalid=%q, want true", got)
		}
		// An ineligible version: the regexp as configured, and the Force
		// checkbox rather than the API's "force": true.
		b.eval(t, `document.querySelector("#pin-version").value = ""`)
		b.do(t, "pin v1.33 to a version of another minor",
			chromedp.SendKeys(css("#pin-version"), "v1.32.9+k3s1"),
			chromedp.Click(css("#pin-form button[type=submit]")),
		)
		b.waitFor(t, "the error", `document.querySelector("#pin-form .form-status").textContent.includes("v1.32.9")`, 10*time.Second)
		got := b.text(t, "#pin-form .form-status")
		if !strings.Contains(got, `include /v1\.33\..*/`) || !strings.Contains(got, "tick Force and pin again") || strings.Contains(got, `"force"`) {
			t.Errorf("an ineligible pin's error reads %q", got)
		}
	})

	t.Run("unpin through the page, without asking again", func(t *testing.T) {
		b.do(t, "open v1.33", chromedp.Navigate(base+"/ui/channels/v1.33"), chromedp.WaitVisible(css("#unpin-form")))
		b.do(t, "unpin", chromedp.SendKeys(css("#unpin-reason"), "etcd fixed"), chromedp.Click(css("#unpin-form button[type=submit]")))
		b.waitFor(t, "the unpin in the history", `(document.querySelector("#history") || {}).textContent?.includes("etcd fixed")`, 15*time.Second)
		if got := b.text(t, "#served"); !strings.Contains(got, "v1.33.6+k3s2") {
			t.Errorf("serves %q after the unpin, want v1.33.6+k3s2", got)
		}
		if got := b.text(t, "#history li"); !strings.Contains(got, "ci-promote unpin: v1.33.5+k3s1 → v1.33.6+k3s2") {
			t.Errorf("newest history entry reads %q", got)
		}
		b.screenshot(t, "channel")
	})

	t.Run("the channel page charts the fleet by version", func(t *testing.T) {
		if got := b.text(t, "#fleet-total"); !strings.HasPrefix(got, "4 clusters recorded, 3 active; 1 reported no version.") {
			t.Errorf("fleet total reads %q", got)
		}
		rows := b.eval(t, `[...document.querySelectorAll("#fleet-chart tbody tr")].map(r =>
			r.dataset.version + "=" + r.querySelector(".reported .n").textContent + "/" + r.querySelector(".served .n").textContent +
			"@" + r.querySelector(".reported rect.fill").getAttribute("width")).join(" ")`)
		if want := "v1.33.6+k3s2=0/4@0 v1.33.5+k3s1=2/0@50 v1.33.1+k3s1=1/0@25"; rows != want {
			t.Errorf("chart rows (version=reporting/served@bar%%) %q, want %q", rows, want)
		}
		// The bars are drawn: the longest fills its track.
		if w := b.eval(t, `String(Math.round(document.querySelector('#fleet-chart tr[data-version="v1.33.6+k3s2"] .served rect.fill').getBoundingClientRect().width /
			document.querySelector('#fleet-chart tr[data-version="v1.33.6+k3s2"] .served rect.track').getBoundingClientRect().width * 100))`); w != "100" {
			t.Errorf("the longest bar fills %s%% of its track, want 100", w)
		}
	})

	t.Run("pause and resume a rollout through the page", func(t *testing.T) {
		testRolloutInABrowser(t, env, b, rollTo)
	})

	t.Run("the channel list follows a pin made elsewhere without a reload", func(t *testing.T) {
		b.do(t, "open the list", chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible(css("#channels")))
		b.eval(t, `window.sameDocument = "yes"`)
		res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/channels/v1.32/pin", "ci-promote", `{"version":"v1.32.8+k3s1","reason":"hold"}`)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("pin v1.32: %d %s", res.StatusCode, body)
		}
		b.waitFor(t, "the v1.32 row to move", `document.querySelector('#channel-rows tr[data-channel="v1.32"]').dataset.version === "v1.32.8+k3s1"`, 10*time.Second)
		if got := b.eval(t, `window.sameDocument || "reloaded"`); got != "yes" {
			t.Errorf("the page reloaded to show the change")
		}
		if got := b.text(t, "#live-status"); !strings.Contains(got, "v1.32 now serves v1.32.8+k3s1") {
			t.Errorf("live region says %q", got)
		}
		b.screenshot(t, "channels")
	})

	t.Run("block a version through the source page", func(t *testing.T) {
		b.do(t, "open k3s", chromedp.Navigate(base+"/ui/sources/k3s"), chromedp.WaitVisible(css("#block-form")))
		if got := b.text(t, "#last-scan"); !strings.Contains(got, "ok") {
			t.Errorf("last scan reads %q", got)
		}
		if got := b.text(t, "#unparsed"); !strings.Contains(got, "sha256-0123.sig") {
			t.Errorf("unparsed tags read %q", got)
		}
		for sel, want := range map[string]string{
			`#versions tr[data-version="v1.34.2+k3s2"].gated td[data-label="Status"]`:     "gated platforms missing linux/arm64",
			`#versions tr[data-version="v1.34.3-rc1+k3s1"].gated td[data-label="Status"]`: "gated signature invalid",
			`#versions tr[data-version="v1.34.1+k3s1"] td[data-label="Status"]`:           "ok, gates passed",
			"#gates": "platforms linux/amd64, linux/arm64 cosign signature",
		} {
			if got := b.text(t, sel); got != want {
				t.Errorf("%s reads %q, want %q", sel, got, want)
			}
		}
		b.do(t, "block v1.32.9+k3s1",
			chromedp.SendKeys(css("#block-version"), "v1.32.9+k3s1"),
			chromedp.SendKeys(css("#block-reason"), "CVE-2026-0001"),
			chromedp.Click(css(`#block-form button[data-method="PUT"]`)),
		)
		b.waitFor(t, "the blocked mark", `document.querySelector('#versions tr[data-version="v1.32.9+k3s1"].blocked') !== null`, 15*time.Second)
		if got := b.text(t, `#versions tr[data-version="v1.32.9+k3s1"] td[data-label="Status"]`); got != "blocked CVE-2026-0001" {
			t.Errorf("status reads %q", got)
		}
		b.screenshot(t, "source")
	})

	t.Run("resolve shows the answer and its path", func(t *testing.T) {
		b.do(t, "resolve from v1.31.2+k3s1",
			chromedp.Navigate(base+"/ui/resolve"),
			chromedp.WaitVisible(css("#resolve-form")),
			chromedp.SetValue(css("#r-source"), "k3s"),
			chromedp.SendKeys(css("#r-current"), "v1.31.2+k3s1"),
			chromedp.Click(css("#resolve-form button[type=submit]")),
			chromedp.WaitVisible(css("#answer")),
		)
		target := b.text(t, "#target")
		path := b.text(t, "#path")
		if !strings.HasPrefix(target, "v1.32.") || !strings.Contains(path, strings.Fields(target)[0]) {
			t.Errorf("target %q, path %q: want a v1.32 target at the end of the path", target, path)
		}
		b.screenshot(t, "resolve")
	})
}

func jsString(s string) string { return fmt.Sprintf("%q", s) }

// gateK3s gives env's source platform and signature gates and records, as
// the indexer's gate checker does, every version passing them but
// v1.34.2+k3s2 (no arm64) and v1.34.3-rc1+k3s1 (a signature that does not
// verify).
func gateK3s(t *testing.T, env *pgEnv) {
	t.Helper()
	both := []string{"linux/amd64", "linux/arm64"}
	env.src.Gates = resolver.Gates{Platforms: both, SignatureKeyFile: "/etc/tidemark/cosign.pub", SignatureKeyID: "key-1"}
	checks := map[string]resolver.GateChecks{}
	for _, name := range k3sTags() {
		c := resolver.GateChecks{Digest: resolver.ParseDigest(tagDigest(name)), Platforms: both, KeyID: "key-1", Signature: resolver.GateOK}
		switch name {
		case "v1.34.2-k3s2":
			c.MissingPlatforms = []string{"linux/arm64"}
		case "v1.34.3-rc1-k3s1":
			c.Signature, c.SignatureReason = resolver.GateInvalid, "no signature verifies with key-1"
		}
		checks[name] = c
	}
	if _, err := env.st.SetGateChecks(context.Background(), "k3s", checks); err != nil {
		t.Fatalf("SetGateChecks: %v", err)
	}
}
