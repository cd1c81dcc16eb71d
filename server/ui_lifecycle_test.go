package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// TestTheSourceTimelineReadsWithoutJavaScriptAtPhoneWidth opens a
// source's page in a real browser with JavaScript off: its lines show as
// bars with today marked and their dates in words, and the page does not
// scroll sideways at 390 px (screenshot checks it).
func TestTheSourceTimelineReadsWithoutJavaScriptAtPhoneWidth(t *testing.T) {
	channels := []catalog.Channel{{Name: "stable", Source: "k3s", Stream: resolver.Released}}
	e := startLifecycle(t, time.Second, channels, "v1.30.0-k3s1", "v1.31.0-k3s1", "v1.32.0-k3s1")
	e.offset.Store(int64(time.Minute))
	e.srv.Snapshots().Tick()
	e.until("1.30 and 1.31 expired", func() bool { return e.lines()["1.31"].Classification == "expired" })
	e.answer("stable", "c1", "v1.30.0+k3s1")

	b := newBrowser(t)
	b.do(t, "JavaScript off", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	}))
	b.do(t, "open the source", chromedp.Navigate(e.url+"/ui/sources/k3s"), chromedp.WaitVisible(chromedp.CSS("#lines")))
	if got := b.text(t, `#lines li[data-line="1.31"] .line-dates`); !strings.Contains(got, "ends") || !strings.Contains(got, "released") {
		t.Errorf("1.31's dates read %q", got)
	}
	if n := b.eval(t, `String(document.querySelectorAll("#lines svg.line-bar rect.today").length)`); n != "3" {
		t.Errorf("today is marked on %s bars, want 3", n)
	}
	b.screenshot(t, "source-lines", "#lines")
}
