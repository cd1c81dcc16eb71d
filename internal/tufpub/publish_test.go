package tufpub_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/theupdateframework/go-tuf/v2/metadata/config"
	"github.com/theupdateframework/go-tuf/v2/metadata/updater"

	"github.com/tidemark-dev/tidemark/internal/tufpub"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/signed"
	"github.com/tidemark-dev/tidemark/server/tufview"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

type repo struct {
	keys string // where root.pem and online.pem are
	st   *store.Store
	pub  *tufpub.Publisher
	base string // .../tuf
	root []byte
	now  time.Time
}

// newRepo is a store with a root made by tuf init's steps, a publisher on
// a clock the test moves, and the repository served over HTTP.
func newRepo(t *testing.T, exp tufpub.Expires) *repo {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, storetest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	dir := t.TempDir()
	rootKey, err := tufpub.NewKeyFile(filepath.Join(dir, "root.pem"))
	if err != nil {
		t.Fatal(err)
	}
	online, err := tufpub.NewKeyFile(filepath.Join(dir, "online.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tufpub.NewKeyFile(filepath.Join(dir, "online.pem")); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Fatalf("a second key over the first: %v, want refused", err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "online.pem")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	loaded, err := tufpub.LoadKeyFile(filepath.Join(dir, "online.pem"))
	if err != nil || !loaded.Equal(online) {
		t.Fatalf("reloading the key: %v", err)
	}
	r := &repo{keys: dir, st: st, now: time.Now()}
	root, err := tufpub.Root(rootKey, online, exp, r.now)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.InitTUF(ctx, root); err != nil {
		t.Fatal(err)
	}
	r.root = root.Body
	r.pub = &tufpub.Publisher{Store: st, Online: online, Expires: exp, Now: func() time.Time { return r.now }}
	e := echo.New()
	e.HTTPErrorHandler = func(err error, c echo.Context) { // the server's table, for the one error here
		code := http.StatusInternalServerError
		if errors.Is(err, resolver.ErrNotFound) {
			code = http.StatusNotFound
		}
		_ = c.String(code, err.Error())
	}
	(&tufview.View{Store: st}).Register(func(p string, h echo.HandlerFunc) { e.GET(p, h) })
	ts := httptest.NewServer(e)
	t.Cleanup(ts.Close)
	r.base = ts.URL + "/tuf"
	return r
}

func answer(channel, version string) signed.Answer {
	v := &signed.Version{Version: version, Tag: "v" + version, Digest: "sha256:" + strings.Repeat("a", 64)}
	return signed.Answer{Channel: channel, Answer: v, Served: []signed.Version{*v}}
}

// client is a fresh go-tuf updater trusting the first root; fetch
// refreshes and downloads channel's target, verified.
func (r *repo) client(t *testing.T) *updater.Updater {
	t.Helper()
	cfg, err := config.New(r.base+"/metadata", r.root)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RemoteTargetsURL = r.base + "/targets"
	cfg.LocalMetadataDir, cfg.LocalTargetsDir = t.TempDir(), t.TempDir()
	up, err := updater.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return up
}

func fetch(t *testing.T, up *updater.Updater, channel string) (signed.Answer, error) {
	t.Helper()
	if err := up.Refresh(); err != nil {
		return signed.Answer{}, err
	}
	ti, err := up.GetTargetInfo(signed.Path(channel))
	if err != nil {
		return signed.Answer{}, err
	}
	_, b, err := up.DownloadTarget(ti, filepath.Join(t.TempDir(), channel+".json"), "")
	if err != nil {
		return signed.Answer{}, err
	}
	var a signed.Answer
	return a, json.Unmarshal(b, &a)
}

// TestAStockTUFClientVerifiesEachChannel: go-tuf's updater, trusting only
// 1.root.json, verifies each channel's target; a change publishes a
// higher revision it sees; an unchanged publication writes nothing.
func TestAStockTUFClientVerifiesEachChannel(t *testing.T) {
	r := newRepo(t, tufpub.DefaultExpires)
	ctx := context.Background()
	if wrote, err := r.pub.Publish(ctx, []signed.Answer{answer("stable", "1.0.0"), answer("edge", "1.1.0")}); err != nil || !wrote {
		t.Fatalf("first publication: %v %v", wrote, err)
	}
	// A client keeps its trusted metadata between runs; each run refreshes
	// once (a go-tuf updater refreshes once in its life).
	dir := t.TempDir()
	for ch, want := range map[string]string{"stable": "1.0.0", "edge": "1.1.0"} {
		a, err := fetch(t, clientIn(t, r.base, r.root, dir), ch)
		if err != nil || a.Answer == nil || a.Answer.Version != want || a.Revision != 1 || a.Channel != ch {
			t.Fatalf("%s through go-tuf: %+v %v", ch, a, err)
		}
	}
	if wrote, err := r.pub.Publish(ctx, []signed.Answer{answer("stable", "1.0.0"), answer("edge", "1.1.0")}); err != nil || wrote {
		t.Fatalf("an unchanged publication wrote %v (%v), want nothing", wrote, err)
	}
	if _, err := r.pub.Publish(ctx, []signed.Answer{answer("stable", "1.0.1"), answer("edge", "1.1.0")}); err != nil {
		t.Fatal(err)
	}
	a, err := fetch(t, clientIn(t, r.base, r.root, dir), "stable")
	if err != nil || a.Answer.Version != "1.0.1" || a.Revision != 2 {
		t.Fatalf("after a change: %+v %v, want 1.0.1 at revision 2", a, err)
	}
	if a, err := fetch(t, r.client(t), "edge"); err != nil || a.Revision != 1 {
		t.Fatalf("an unchanged channel: %+v %v, want revision 1", a, err)
	}
}

// mirror serves r's repository through a proxy that alters what alter
// says, as a stale or hostile mirror, CDN or replica would.
func (r *repo) mirror(t *testing.T, alter func(path string, body []byte) []byte) *repo {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		res, err := http.Get(r.base + strings.TrimPrefix(req.URL.Path, "/tuf"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		w.WriteHeader(res.StatusCode)
		_, _ = w.Write(alter(req.URL.Path, b))
	}))
	t.Cleanup(ts.Close)
	return &repo{base: ts.URL + "/tuf", root: r.root}
}

// clientIn is a go-tuf updater on base keeping its trusted metadata in
// dir (as a real client keeps it between runs).
func clientIn(t *testing.T, base string, root []byte, dir string) *updater.Updater {
	t.Helper()
	cfg, err := config.New(base+"/metadata", root)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RemoteTargetsURL = base + "/targets"
	cfg.LocalMetadataDir, cfg.LocalTargetsDir = dir, t.TempDir()
	up, err := updater.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return up
}

// TestTheClientRefusesWhatItMust: a replayed older timestamp, an expired
// timestamp and a tampered target are each refused by go-tuf's updater.
func TestTheClientRefusesWhatItMust(t *testing.T) {
	r := newRepo(t, tufpub.DefaultExpires)
	ctx := context.Background()
	if _, err := r.pub.Publish(ctx, []signed.Answer{answer("stable", "1.0.0")}); err != nil {
		t.Fatal(err)
	}
	old, err := r.st.TUFMeta(ctx, signed.Timestamp, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.pub.Publish(ctx, []signed.Answer{answer("stable", "1.0.1")}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if a, err := fetch(t, clientIn(t, r.base, r.root, dir), "stable"); err != nil || a.Answer.Version != "1.0.1" {
		t.Fatalf("the real repository: %+v %v", a, err)
	}
	stale := r.mirror(t, func(p string, b []byte) []byte {
		if strings.HasSuffix(p, "/timestamp.json") {
			return old.Body
		}
		return b
	})
	if _, err := fetch(t, clientIn(t, stale.base, r.root, dir), "stable"); err == nil {
		t.Error("a client that had seen the newer timestamp took a replayed older one")
	} else {
		t.Logf("replayed timestamp refused: %v", err)
	}
	tampered := r.mirror(t, func(p string, b []byte) []byte {
		if strings.Contains(p, "/targets/channels/") {
			return []byte(strings.Replace(string(b), "1.0.1", "9.9.9", 1))
		}
		return b
	})
	if _, err := fetch(t, clientIn(t, tampered.base, r.root, t.TempDir()), "stable"); err == nil {
		t.Error("a tampered target was taken")
	} else {
		t.Logf("tampered target refused: %v", err)
	}

	// A timestamp that expired (published an hour ago with a minute's life).
	exp := tufpub.DefaultExpires
	exp.Timestamp = time.Minute
	late := newRepo(t, exp)
	late.now = time.Now().Add(-time.Hour)
	if _, err := late.pub.Publish(ctx, []signed.Answer{answer("stable", "1.0.0")}); err != nil {
		t.Fatal(err)
	}
	if _, err := fetch(t, late.client(t), "stable"); err == nil || !strings.Contains(strings.ToLower(err.Error()), "expired") {
		t.Errorf("an expired timestamp: %v, want refused as expired", err)
	}
	// The publisher signs a new one once half its life has passed.
	late.now = time.Now()
	if wrote, err := late.pub.Publish(ctx, []signed.Answer{answer("stable", "1.0.0")}); err != nil || !wrote {
		t.Fatalf("re-signing a stale timestamp: %v %v", wrote, err)
	}
	if _, err := fetch(t, late.client(t), "stable"); err != nil {
		t.Errorf("after the timestamp was re-signed: %v", err)
	}
}

// TestKeysRotate: a new root key (the next root signed by both) and a new
// online key (a pending root, served once serve runs with the new key,
// which re-signs every role) keep a client that trusted only 1.root.json
// verifying answers.
func TestKeysRotate(t *testing.T) {
	r := newRepo(t, tufpub.DefaultExpires)
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := r.pub.Publish(ctx, []signed.Answer{answer("stable", "1.0.0")}); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	if _, err := fetch(t, clientIn(t, r.base, r.root, cache), "stable"); err != nil {
		t.Fatal(err)
	}
	cur, err := r.st.TUFMeta(ctx, signed.Root, 0)
	if err != nil {
		t.Fatal(err)
	}
	oldRoot, err := tufpub.LoadKeyFile(filepath.Join(r.keys, "root.pem"))
	if err != nil {
		t.Fatal(err)
	}
	newRoot, err := tufpub.NewKeyFile(filepath.Join(dir, "root2.pem"))
	if err != nil {
		t.Fatal(err)
	}
	next, err := tufpub.NextRoot(cur, oldRoot, newRoot, nil, tufpub.DefaultExpires, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.st.AddTUFRoot(ctx, next, false); err != nil {
		t.Fatal(err)
	}
	if a, err := fetch(t, clientIn(t, r.base, r.root, cache), "stable"); err != nil || a.Answer.Version != "1.0.0" {
		t.Fatalf("after a new root key: %+v %v", a, err)
	}
	// A new online key: the next root is pending, not served.
	newOnline, err := tufpub.NewKeyFile(filepath.Join(dir, "online2.pem"))
	if err != nil {
		t.Fatal(err)
	}
	cur, _ = r.st.TUFMeta(ctx, signed.Root, 0)
	pending, err := tufpub.NextRoot(cur, newRoot, nil, newOnline.Public().(ed25519.PublicKey), tufpub.DefaultExpires, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.st.AddTUFRoot(ctx, pending, true); err != nil {
		t.Fatal(err)
	}
	if res, _ := http.Get(r.base + "/metadata/3.root.json"); res.StatusCode != http.StatusNotFound {
		t.Fatalf("a pending root is served: %d", res.StatusCode)
	}
	// serve still on the old key keeps publishing under root 2.
	if _, err := r.pub.Publish(ctx, []signed.Answer{answer("stable", "1.0.1")}); err != nil {
		t.Fatalf("the old online key while the new root waits: %v", err)
	}
	// serve restarted with the new key: root 3 served, all re-signed.
	r.pub.Online = newOnline
	if wrote, err := r.pub.Publish(ctx, []signed.Answer{answer("stable", "1.0.1")}); err != nil || !wrote {
		t.Fatalf("the new online key: %v %v", wrote, err)
	}
	if res, _ := http.Get(r.base + "/metadata/3.root.json"); res.StatusCode != http.StatusOK {
		t.Fatalf("root 3 after serve ran with its key: %d", res.StatusCode)
	}
	if a, err := fetch(t, clientIn(t, r.base, r.root, cache), "stable"); err != nil || a.Answer.Version != "1.0.1" {
		t.Fatalf("after a new online key: %+v %v", a, err)
	}
}

// TestTwoReplicasSignOnceAndServeTheSameBytes: two replicas publishing the
// same change at once sign it once (versions only grow, one targets
// version for one change), and both serve the same bytes.
func TestTwoReplicasSignOnceAndServeTheSameBytes(t *testing.T) {
	r := newRepo(t, tufpub.DefaultExpires)
	ctx := context.Background()
	other := &tufpub.Publisher{Store: r.st, Online: r.pub.Online, Expires: r.pub.Expires, Now: time.Now}
	var wg sync.WaitGroup
	var wrote atomic.Int32
	for _, p := range []*tufpub.Publisher{r.pub, other, r.pub, other} {
		wg.Go(func() {
			w, err := p.Publish(ctx, []signed.Answer{answer("stable", "2.0.0")})
			if err != nil {
				t.Error(err)
			}
			if w {
				wrote.Add(1)
			}
		})
	}
	wg.Wait()
	if n := wrote.Load(); n != 1 {
		t.Fatalf("%d publications of one change by racing replicas, want 1", n)
	}
	targets, err := r.st.TUFMeta(ctx, signed.Targets, 0)
	if err != nil || targets.Version != 1 {
		t.Fatalf("targets version %d (%v), want 1", targets.Version, err)
	}
	second := httptest.NewServer(func() http.Handler {
		e := echo.New()
		(&tufview.View{Store: r.st}).Register(func(p string, h echo.HandlerFunc) { e.GET(p, h) })
		return e
	}())
	defer second.Close()
	for _, f := range []string{"timestamp.json", "1.snapshot.json", "1.targets.json", "1.root.json"} {
		a, b := body(t, r.base+"/metadata/"+f), body(t, second.URL+"/tuf/metadata/"+f)
		if a == "" || a != b {
			t.Errorf("%s differs between replicas (or is empty)", f)
		}
	}
}

func body(t *testing.T, u string) string {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}
