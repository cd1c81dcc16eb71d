package server

import (
	"context"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// rolloutFrom is what "latest" served before the rollout the console tests
// seed; it rolls out whatever "latest" serves now.
const rolloutFrom = "v1.33.6+k3s2"

var consolePolicy = resolver.RolloutPolicy{Steps: []int{10, 50, 100}, Interval: time.Hour}

// rolloutChannels are k3sChannels with "latest" rolling out in steps.
func rolloutChannels() []catalog.Channel {
	chs := k3sChannels()
	for i := range chs {
		if chs[i].Name == "latest" {
			chs[i].Rollout = &consolePolicy
		}
	}
	return chs
}

// serveRollouts starts a replica of env serving rolloutChannels, with
// rollouts (and the fleet) kept in env's store; no replica leads, so only
// what a test records starts or steps a rollout.
func serveRollouts(t *testing.T, env *pgEnv, withStore bool) {
	t.Helper()
	opts := Options{Data: env.st, Sources: []catalog.Source{env.src}, Channels: rolloutChannels(), Fleet: fleet.Options{Store: env.st}}
	if withStore {
		opts.Rollouts = RolloutOptions{Store: env.st}
	}
	env.srv, env.ts, env.logs = env.serve(env.st, opts)
}

// seedRollout records through the store, as the indexing leader does,
// "latest"'s baseline (rolloutFrom) and then the rollout of the version it
// serves now, which it returns.
func seedRollout(t *testing.T, env *pgEnv) string {
	t.Helper()
	ctx := context.Background()
	ch, _ := channel(t, env.ts, "latest")
	if ch.Version == nil {
		t.Fatal("latest serves nothing: nothing to roll out")
	}
	to := *ch.Version
	if to == rolloutFrom {
		t.Fatalf("latest serves %q: nothing to roll out from %s", to, rolloutFrom)
	}
	if ok, err := env.st.StartRollout(ctx, snapshot.RolloutStart{Channel: "latest", Served: rolloutFrom, To: rolloutFrom, Policy: consolePolicy, Baseline: true}); err != nil || !ok {
		t.Fatalf("baseline: started %v, %v", ok, err)
	}
	states, err := env.st.LoadStates(ctx)
	if err != nil || states["latest"].Rollout == nil {
		t.Fatalf("no baseline recorded: %v", err)
	}
	if ok, err := env.st.StartRollout(ctx, snapshot.RolloutStart{Channel: "latest", Prev: states["latest"].Rollout.ID,
		Served: rolloutFrom, To: to, Policy: consolePolicy, Actor: "tidemark", Reason: to + " indexed"}); err != nil || !ok {
		t.Fatalf("rollout: started %v, %v", ok, err)
	}
	// Two clusters were last answered the new version, three the old.
	var batch []resolver.Sighting
	for i, served := range []string{to, to, rolloutFrom, rolloutFrom, rolloutFrom} {
		batch = append(batch, resolver.Sighting{Cluster: "secret-cluster-r" + string(rune('a'+i)), Channel: "latest", Served: served, At: time.Now()})
	}
	if _, err := env.st.RecordFleet(ctx, batch); err != nil {
		t.Fatalf("RecordFleet: %v", err)
	}
	return to
}

var (
	blockTags = regexp.MustCompile(`</?(?:dt|dd|td|th|tr|li|p|div|h2|button)\b[^>]*>`)
	htmlTags  = regexp.MustCompile(`<[^>]*>`)
)

// textOf is html as a person reads it: no tags, a space between blocks,
// spaces collapsed.
func textOf(s string) string {
	s = htmlTags.ReplaceAllString(blockTags.ReplaceAllString(s, " "), "")
	return strings.Join(strings.Fields(html.UnescapeString(s)), " ")
}

// TestConsoleShowsRollouts reads a rollout seeded through the store as
// plain HTML: the bar in the channel list, the channel page's section with
// the API's fleet counts, the controls, and the history in words.
func TestConsoleShowsRollouts(t *testing.T) {
	env := newPGEnv(t, Options{})
	to := seedRollout(t, env)
	serveRollouts(t, env, true)

	t.Run("the channel list has a labelled bar on the rolling channel only", func(t *testing.T) {
		_, body := get(t, env.ts, "/ui/")
		page := html.UnescapeString(string(body))
		row := regexp.MustCompile(`(?s)<tr data-channel="latest".*?</tr>`).FindString(page)
		for _, w := range []string{
			`data-rollout="running 10%"`,
			`<progress max="100" value="10" aria-labelledby="rollout-latest">10%</progress>`,
			`<span class="rollout-text" id="rollout-latest">`,
		} {
			if !strings.Contains(row, w) {
				t.Errorf("latest's row has no %q:\n%s", w, row)
			}
		}
		if got, want := textOf(row), "Rollout "+rolloutFrom+" → to "+to+": 10% running"; !strings.Contains(got, want) {
			t.Errorf("latest's row reads %q, want %q in it", got, want)
		}
		if n := strings.Count(page, "<progress"); n != 1 {
			t.Errorf("%d progress bars in the list, want 1 (channels without a rollout have none)", n)
		}
	})

	t.Run("the channel page has the rollout, its fleet and its controls", func(t *testing.T) {
		res, body := get(t, env.ts, "/ui/channels/latest")
		page := html.UnescapeString(string(body))
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET /ui/channels/latest: %d", res.StatusCode)
		}
		// Serves is the target; beside it, what a request with no cluster ID gets.
		served := regexp.MustCompile(`(?s)<dd id="served">.*?</dd>`).FindString(page)
		if want := "rolling out " + to + ": 10 %; a request with no cluster ID gets " + rolloutFrom; !strings.Contains(textOf(served), want) {
			t.Errorf("Serves reads %q, want %q in it", textOf(served), want)
		}
		section := regexp.MustCompile(`(?s)<section aria-labelledby="rollout-h" id="rollout">.*?</section>`).FindString(page)
		for _, w := range []string{
			"From " + rolloutFrom, "To " + to, "State running", "Clusters getting " + to + " 10%",
			"Step 1 of 3 (steps 10%, 50%, 100%)", "Next step 20", // a time, this century
			"Fleet 2 clusters last served " + to + ", 3 last served " + rolloutFrom,
			"Pause Resume Advance Halt",
		} {
			if !strings.Contains(textOf(section), w) {
				t.Errorf("the rollout section has no %q:\n%s", w, textOf(section))
			}
		}
		for _, w := range []string{
			`<form id="rollout-form" class="api-form" hidden data-api-method="POST"`,
			`<button type="submit" data-api-path="/api/v1/channels/latest/rollout/resume">Resume</button>`,
			`<noscript><p>Controlling the rollout here needs JavaScript`,
		} {
			if !strings.Contains(section, w) {
				t.Errorf("the rollout section has no %q", w)
			}
		}
		if strings.Contains(page, "secret-cluster") {
			t.Errorf("the channel page names a cluster")
		}
		history := regexp.MustCompile(`(?s)<ol class="timeline" id="history">.*?</ol>`).FindString(page)
		if want := "tidemark started a rollout: " + rolloutFrom + " → " + to; !strings.Contains(textOf(history), want) {
			t.Errorf("history reads %q, want %q in it", textOf(history), want)
		}
	})

	t.Run("a control through the API shows on the page and in the history", func(t *testing.T) {
		res, live := get(t, env.ts, "/ui/live/channels")
		etag := res.Header.Get("ETag")
		if res, body := do(t, env, env.ts, http.MethodPost, "/api/v1/channels/latest/rollout/halt", "ci-promote", `{"reason":"canary nodes NotReady"}`); res.StatusCode != http.StatusOK {
			t.Fatalf("halt: %d %s", res.StatusCode, body)
		}
		res, after := get(t, env.ts, "/ui/live/channels", "If-None-Match", etag)
		if res.StatusCode != http.StatusOK || res.Header.Get("ETag") == etag || !strings.Contains(string(after), `data-rollout="halted 0%"`) {
			t.Errorf("live rows after a halt: %d ETag %q (was %q)\n%s\nwas\n%s", res.StatusCode, res.Header.Get("ETag"), etag, after, live)
		}
		_, body := get(t, env.ts, "/ui/channels/latest")
		page := textOf(string(body))
		for _, w := range []string{"State halted", "Next step none while halted", "ci-promote halted the rollout: " + rolloutFrom + " → " + to + " “canary nodes NotReady”"} {
			if !strings.Contains(page, w) {
				t.Errorf("after a halt, the page has no %q", w)
			}
		}
	})

	t.Run("a channel that never rolled out has no rollout section", func(t *testing.T) {
		_, body := get(t, env.ts, "/ui/channels/v1.33")
		if strings.Contains(string(body), `id="rollout"`) || strings.Contains(string(body), "<progress") {
			t.Errorf("v1.33 shows a rollout")
		}
	})

	t.Run("without the rollout store the page shows the rollout without counts, and why", func(t *testing.T) {
		serveRollouts(t, env, false)
		_, body := get(t, env.ts, "/ui/channels/latest")
		page := html.UnescapeString(string(body))
		if !strings.Contains(page, `id="rollout-problem"`) || strings.Contains(page, `id="rollout-clusters"`) || !strings.Contains(textOf(page), "State halted") {
			t.Errorf("rollout section without a store:\n%s", textOf(regexp.MustCompile(`(?s)<section aria-labelledby="rollout-h".*?</section>`).FindString(page)))
		}
	})
}

// TestConsoleLiveRowsFollowRolloutSteps: a step passes by the clock, with
// no write and no new snapshot; the next poll has the new percent.
func TestConsoleLiveRowsFollowRolloutSteps(t *testing.T) {
	src := semverSource(t, "k3s", "docker.io/rancher/k3s-upgrade")
	boundary := time.Now().Add(time.Second)
	states := map[string]catalog.ChannelState{"latest": {Revision: 1, UpdatedAt: scanned, Rollout: &resolver.Rollout{
		ID: 7, Channel: "latest", From: "v1.33.6+k3s2", To: "v1.34.2+k3s2", Steps: consolePolicy.Steps, Interval: time.Hour,
		StartedAt: boundary.Add(-time.Hour),
	}}}
	snap := snapshot.New(rolloutChannels(), []catalog.SourceData{sourceData(src, k3sTags(), nil)}, states, loadedAt)
	_, ts, _ := newTestServer(t, snap, "")

	res, body := get(t, ts, "/ui/live/channels")
	etag := res.Header.Get("ETag")
	if !strings.Contains(string(body), `data-rollout="running 10%"`) {
		t.Fatalf("first poll has no rollout at 10%%:\n%s", body)
	}
	time.Sleep(time.Until(boundary) + 50*time.Millisecond)
	res, body = get(t, ts, "/ui/live/channels", "If-None-Match", etag)
	if res.StatusCode != http.StatusOK || res.Header.Get("ETag") == etag {
		t.Fatalf("poll after a step: %d ETag %q (was %q), want 200 and a new one", res.StatusCode, res.Header.Get("ETag"), etag)
	}
	if !strings.Contains(string(body), `data-rollout="running 50%"`) || !strings.Contains(string(body), `<progress max="100" value="50"`) {
		t.Errorf("poll after a step does not show 50%%:\n%s", body)
	}
}
