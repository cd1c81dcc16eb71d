package capi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server/capi"
)

// kubeTags are registry.k8s.io/kube-apiserver-shaped tags: several patches
// per minor, release candidates, a blocked patch, a minor (1.31) whose only
// release is blocked.
var kubeTags = []string{
	"v1.29.0", "v1.29.4", "v1.30.0", "v1.30.2", "v1.30.3-rc.0", "v1.31.0",
	"v1.32.0", "v1.32.5", "v1.32.6", "v1.33.0-rc.1", "v1.33.0", "v1.33.2", "v1.34.0",
}

func hooksServer(t *testing.T) *httptest.Server {
	t.Helper()
	p, err := resolver.NewParser(resolver.SchemeSemver, "")
	if err != nil {
		t.Fatal(err)
	}
	src := catalog.Source{Name: "kube-apiserver", Image: "registry.k8s.io/kube-apiserver", Parser: p}
	d := catalog.SourceData{Source: src}
	for _, name := range kubeTags {
		tag := src.Classify(name)
		tag.Present, tag.Digest = true, resolver.ParseDigest("sha256:"+strings.Repeat("a", 64))
		d.Tags = append(d.Tags, tag)
	}
	now := time.Now()
	d.Blocks = []catalog.Block{
		{Source: src.Name, Version: "v1.32.6", Reason: "regression", BlockedAt: now},
		{Source: src.Name, Version: "v1.31.0", Reason: "CVE", BlockedAt: now},
	}
	snap := snapshot.New(nil, []catalog.SourceData{d}, nil, now)
	e := echo.New()
	h := &capi.Hooks{Sources: []string{"kube-apiserver"}, Snapshot: func() *snapshot.Snapshot { return snap }}
	h.Register(e)
	ts := httptest.NewServer(e)
	t.Cleanup(ts.Close)
	return ts
}

func post(t *testing.T, url string, body []byte) (int, []byte) {
	t.Helper()
	res, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// TestDiscoveryListsTheHandlers: Cluster API's DiscoveryResponse decodes
// the answer and finds one GenerateUpgradePlan handler per source.
func TestDiscoveryListsTheHandlers(t *testing.T) {
	ts := hooksServer(t)
	req, _ := json.Marshal(&runtimehooksv1.DiscoveryRequest{TypeMeta: metav1.TypeMeta{APIVersion: capi.GroupVersion, Kind: "DiscoveryRequest"}})
	code, body := post(t, ts.URL+capi.Prefix+"/discovery", req)
	var res runtimehooksv1.DiscoveryResponse
	if err := json.Unmarshal(body, &res); err != nil || code != 200 {
		t.Fatalf("discovery: %d %s (%v)", code, body, err)
	}
	if res.Status != runtimehooksv1.ResponseStatusSuccess || len(res.Handlers) != 1 {
		t.Fatalf("discovery %+v", res)
	}
	h := res.Handlers[0]
	if h.Name != "kube-apiserver" || h.RequestHook.Hook != "GenerateUpgradePlan" || h.RequestHook.APIVersion != runtimehooksv1.GroupVersion.String() ||
		h.FailurePolicy == nil || *h.FailurePolicy != runtimehooksv1.FailurePolicyFail {
		t.Errorf("handler %+v", h)
	}
}

// TestGenerateUpgradePlan: requests encoded and answers decoded with
// Cluster API's own types; the plan follows Cluster API's rules (one
// version per minor, ascending, the last equal to the target), skips what
// is blocked or not released, and a target that is not servable or is a
// downgrade is a Failure with the reason.
func TestGenerateUpgradePlan(t *testing.T) {
	ts := hooksServer(t)
	ask := func(from, to string) (int, runtimehooksv1.GenerateUpgradePlanResponse) {
		t.Helper()
		req := &runtimehooksv1.GenerateUpgradePlanRequest{
			TypeMeta:                          metav1.TypeMeta{APIVersion: capi.GroupVersion, Kind: "GenerateUpgradePlanRequest"},
			Cluster:                           clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "prod-1", Namespace: "default"}},
			FromControlPlaneKubernetesVersion: from,
			FromWorkersKubernetesVersion:      from,
			ToKubernetesVersion:               to,
		}
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		code, body := post(t, ts.URL+capi.Prefix+"/generateupgradeplan/kube-apiserver", b)
		var res runtimehooksv1.GenerateUpgradePlanResponse
		if err := json.Unmarshal(body, &res); err != nil {
			t.Fatalf("%s -> %s: %d %s: %v", from, to, code, body, err)
		}
		if res.Kind != "GenerateUpgradePlanResponse" || res.APIVersion != capi.GroupVersion {
			t.Errorf("answer type %s %s", res.APIVersion, res.Kind)
		}
		return code, res
	}
	versions := func(r runtimehooksv1.GenerateUpgradePlanResponse) string {
		var vs []string
		for _, s := range r.ControlPlaneUpgrades {
			vs = append(vs, s.Version)
		}
		return strings.Join(vs, " ")
	}
	for _, tc := range []struct{ from, to, want string }{
		{"v1.29.0", "v1.34.0", "v1.30.2 v1.32.5 v1.33.2 v1.34.0"}, // 1.31's only release and 1.32.6 are blocked
		{"v1.29.4", "v1.30.0", "v1.30.0"},
		{"v1.32.0", "v1.32.5", "v1.32.5"},
		{"v1.28.9", "v1.30.2", "v1.29.4 v1.30.2"}, // a from never indexed
	} {
		code, res := ask(tc.from, tc.to)
		if code != 200 || res.Status != runtimehooksv1.ResponseStatusSuccess || versions(res) != tc.want {
			t.Errorf("%s -> %s: %d %s %q, plan %q, want %q", tc.from, tc.to, code, res.Status, res.Message, versions(res), tc.want)
		}
	}
	for _, tc := range []struct{ from, to, why string }{
		{"v1.33.0", "v1.32.5", "downgrade"},
		{"v1.30.0", "v1.32.6", "blocked"},
		{"v1.30.0", "v1.35.0", "not a version"},
	} {
		code, res := ask(tc.from, tc.to)
		if code != 200 || res.Status != runtimehooksv1.ResponseStatusFailure || !strings.Contains(res.Message, tc.why) || len(res.ControlPlaneUpgrades) != 0 {
			t.Errorf("%s -> %s: %d %s %q %v, want Failure saying %q", tc.from, tc.to, code, res.Status, res.Message, res.ControlPlaneUpgrades, tc.why)
		}
	}
	// Bad input: a body that is not JSON, a missing version, an unknown
	// handler, a body past the limit.
	if code, body := post(t, ts.URL+capi.Prefix+"/generateupgradeplan/kube-apiserver", []byte("{")); code != 400 || !strings.Contains(string(body), "Failure") {
		t.Errorf("not JSON: %d %s", code, body)
	}
	if code, body := post(t, ts.URL+capi.Prefix+"/generateupgradeplan/kube-apiserver", []byte(`{"toKubernetesVersion":"v1.30.0"}`)); code != 400 || !strings.Contains(string(body), "fromControlPlaneKubernetesVersion") {
		t.Errorf("no from: %d %s", code, body)
	}
	if code, _ := post(t, ts.URL+capi.Prefix+"/generateupgradeplan/etcd", []byte(`{}`)); code != 404 {
		t.Errorf("unknown handler: %d", code)
	}
	big := append([]byte(`{"x":"`), bytes.Repeat([]byte("a"), capi.MaxBody)...)
	// (The server answers it 413 naming the limit: server/bodies_test.go.)
	if code, _ := post(t, ts.URL+capi.Prefix+"/generateupgradeplan/kube-apiserver", append(big, '"', '}')); code < 400 {
		t.Errorf("a body past %d bytes: %d, want it refused", capi.MaxBody, code)
	}
	if code, _ := post(t, ts.URL+capi.Prefix+"/generateupgradeplan/kube-apiserver", []byte(`{"fromControlPlaneKubernetesVersion":"v1.29.0","toKubernetesVersion":"v1.30.0","x":"`+strings.Repeat("a", capi.MaxBody-200)+`"}`)); code != 200 {
		t.Errorf("a body just under %d bytes: %d, want 200", capi.MaxBody, code)
	}
}
