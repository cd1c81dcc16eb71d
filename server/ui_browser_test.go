package server

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Debian's chromium, which .ci/run installs. The tests never download a
// browser; a missing or broken one fails them.
const chromiumPath = "/usr/bin/chromium"

var updateScreenshots = flag.Bool("update-screenshots", false, "write the console's screenshots to docs/screenshots")

// browser is one headless chromium tab, with what its pages reported:
// uncaught exceptions and security (Content-Security-Policy) refusals.
type browser struct {
	ctx  context.Context
	mu   sync.Mutex
	errs []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("no browser at %s (apt-get install chromium; .ci/run installs it): %v", chromiumPath, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox, // tests run as root in CI, where chromium's sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first action starts the browser; it must not have a deadline.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", chromiumPath, err)
	}
	b := &browser{ctx: ctx}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.IsException() || m.Source == "security" {
				b.mu.Lock()
				b.errs = append(b.errs, m.String())
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.errs {
			t.Errorf("the page reported: %s", e)
		}
	})
	return b
}

// do runs steps with a deadline, failing the test with what was being done.
func (b *browser) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// text is the visible text of the first element sel matches.
func (b *browser) text(t *testing.T, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("read %s: %v", sel, err)
	}
	return strings.Join(strings.Fields(s), " ")
}

// eval runs a JavaScript expression that yields a string.
func (b *browser) eval(t *testing.T, expr string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return s
}

// waitFor waits until a JavaScript predicate holds.
// It asks again across navigations (a write reloads the page), which
// chromedp's Poll does not survive.
func (b *browser) waitFor(t *testing.T, what, predicate string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("Boolean("+predicate+")"))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("waiting for %s (%s): not within %s (last error: %v)", what, predicate, timeout, last)
}

// screenshot takes what a screen shows of the page (the top, not the whole
// of a long page) at desktop and phone width. The files
// are written only with -update-screenshots; taking them always checks
// that the pages render at both widths. With a selector, the shot shows
// that element's part of the page instead of the top.
func (b *browser) screenshot(t *testing.T, name string, at ...string) {
	t.Helper()
	for _, size := range []struct {
		suffix        string
		width, height int64
		mobile        bool
	}{{"desktop", 1280, 900, false}, {"phone", 390, 844, true}} {
		opts := []chromedp.EmulateViewportOption{}
		if size.mobile {
			opts = append(opts, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulatePortrait)
		}
		ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
		scroll := `window.scrollTo(0, 0)`
		if len(at) > 0 {
			scroll = `document.querySelector(` + strconv.Quote(at[0]) + `).scrollIntoView()`
		}
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(size.width, size.height, opts...),
			chromedp.Evaluate[chromedp.Void](scroll)); err != nil {
			cancel()
			t.Fatalf("viewport %s: %v", size.suffix, err)
		}
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		cancel()
		if err != nil || len(png) < 1000 {
			t.Fatalf("screenshot %s %s: %d bytes, %v", name, size.suffix, len(png), err)
		}
		if size.mobile {
			// A phone-width page must not scroll sideways: that is what
			// the card layout of the tables is for.
			if w := b.eval(t, `String(document.documentElement.scrollWidth)`); w != "390" {
				t.Errorf("%s at phone width is %s px wide, want 390", name, w)
			}
		}
		if *updateScreenshots {
			file := filepath.Join("..", "docs", "screenshots", name+"-"+size.suffix+".png")
			if err := os.WriteFile(file, png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	b.do(t, "reset viewport", chromedp.EmulateViewport(1280, 900))
}
