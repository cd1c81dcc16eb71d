package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// TestClusterAPIHooksThroughTheServer: the hooks answer through the whole
// server, every answer valid against openapi.yaml, and count in
// tidemark_capi_upgrade_plans_total.
func TestClusterAPIHooksThroughTheServer(t *testing.T) {
	snap := k3sSnapshot(t)
	s, err := New(Options{
		Log:        slog.New(slog.NewTextHandler(&testutil.LockedBuffer{}, nil)),
		Load:       func(context.Context) (*snapshot.Snapshot, error) { return snap, nil },
		ClusterAPI: []string{"k3s"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(validating(t, s.Handler()))
	t.Cleanup(ts.Close)
	const prefix = "/capi/hooks.runtime.cluster.x-k8s.io/v1alpha1"
	if res, body := send(t, http.MethodPost, ts.URL+prefix+"/discovery", "", `{"apiVersion":"hooks.runtime.cluster.x-k8s.io/v1alpha1","kind":"DiscoveryRequest"}`); res.StatusCode != 200 || !strings.Contains(string(body), `"name":"k3s"`) {
		t.Errorf("discovery: %d %s", res.StatusCode, body)
	}
	res, body := send(t, http.MethodPost, ts.URL+prefix+"/generateupgradeplan/k3s", "",
		`{"fromControlPlaneKubernetesVersion":"v1.31.2+k3s1","toKubernetesVersion":"v1.33.6+k3s2"}`)
	if res.StatusCode != 200 || !strings.Contains(string(body), `"controlPlaneUpgrades":[{"version":"v1.32.9+k3s1"},{"version":"v1.33.6+k3s2"}]`) {
		t.Errorf("plan: %d %s", res.StatusCode, body)
	}
	res, body = send(t, http.MethodPost, ts.URL+prefix+"/generateupgradeplan/k3s", "",
		`{"fromControlPlaneKubernetesVersion":"v1.31.2+k3s1","toKubernetesVersion":"v1.32.10+k3s1"}`)
	if res.StatusCode != 200 || !strings.Contains(string(body), `"status":"Failure"`) || !strings.Contains(string(body), "blocked") {
		t.Errorf("plan to a blocked version: %d %s", res.StatusCode, body)
	}
	_, metrics := get(t, ts, "/metrics")
	for _, want := range []string{`tidemark_capi_upgrade_plans_total{source="k3s",status="Success"} 1`, `tidemark_capi_upgrade_plans_total{source="k3s",status="Failure"} 1`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
