package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/internal/enroll"
	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/server/core"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// enrolledReplica runs a replica on the database at url with
// fleet.enrollment mode, its keys kept current as serve keeps them.
func enrolledReplica(t *testing.T, url, mode string) (string, *store.Store) {
	t.Helper()
	base, st, _ := enrolledServer(t, url, mode)
	return base, st
}

// enrolledServer is enrolledReplica, also answering the server.
func enrolledServer(t *testing.T, url, mode string) (string, *store.Store, *Server) {
	t.Helper()
	st, src := fleetStoreAt(t, url)
	keys := enroll.New(mode, st, nil) // nil when off
	if keys != nil {
		if err := keys.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); keys.Run(ctx) }()
		t.Cleanup(func() { stop(); <-done })
	}
	srv, err := New(Options{Data: st, Sources: []catalog.Source{src}, Store: st, Enrollment: keys, Enroller: st,
		Version: "test", ConfigDigest: func() string { return strings.Repeat("ab", 32) },
		Fleet:    fleet.Options{Store: st, FlushEvery: 50 * time.Millisecond},
		Channels: []catalog.Channel{{Name: "stable", Source: "k3s", Stream: resolver.Released}}})
	if err != nil {
		t.Fatal(err)
	}
	return runOnLoopback(t, srv, runOpts{}), st, srv
}

// ask polls channel stable on base as a cluster: id in X-SUC-Cluster-ID
// (none when ""), key as ?key= or, with bearer, Authorization.
func ask(t *testing.T, base, id, key string, bearer bool) (int, string) {
	t.Helper()
	u := base + "/v1-release/channels/stable"
	if key != "" && !bearer {
		u += "?key=" + key
	}
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if id != "" {
		req.Header.Set("X-SUC-Cluster-ID", id)
	}
	req.Header.Set("X-SUC-Latest-Version", "v1.30.0+k3s1")
	if key != "" && bearer {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func apiCall(t *testing.T, base, method, path, token, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// recordOf waits for cluster id's record to be written and answers
// whether it counts as evidence and is enrolled.
func recordOf(t *testing.T, conn *pgx.Conn, id string, after time.Time) (evidence, enrolled bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var seen time.Time
		err := conn.QueryRow(context.Background(), `select last_seen, evidence, enrolled from fleet where cluster = $1 and channel = 'stable'`, id).
			Scan(&seen, &evidence, &enrolled)
		if err == nil && !seen.Before(after.Truncate(time.Microsecond)) {
			return evidence, enrolled
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster %s's request is not recorded within 10s (%v)", id, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitStatus polls until ask answers want, within a second; it returns
// how long that took.
func waitStatus(t *testing.T, base, id, key string, want int, what string) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		code, body := ask(t, base, id, key, false)
		if code == want {
			return time.Since(start)
		}
		if time.Since(start) > time.Second {
			t.Fatalf("%s: after 1s the other replica answers %d %s, want %d", what, code, body, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestEnrollmentOptionalAcrossReplicas: a cluster enrolled through one
// replica is accepted by the other within a second, its key (as ?key= or
// Bearer) binds the request to its ID over X-SUC-Cluster-ID, only enrolled
// clusters count as evidence, a wrong key is a 401 enrollment problem that
// counts as a failed credential, and a key revoked through the second
// replica is refused by the first within a second.
func TestEnrollmentOptionalAcrossReplicas(t *testing.T) {
	u := storetest.URL(t)
	baseA, stA := enrolledReplica(t, u, enroll.Optional)
	baseB, _ := enrolledReplica(t, u, enroll.Optional)
	ctx := context.Background()
	admin, err := stA.CreateToken(ctx, "root", []string{"admin"})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	code, body := apiCall(t, baseA, http.MethodPost, "/api/v1/fleet/enrollments", admin, `{"id":"edge-1","channels":["stable"]}`)
	if code != http.StatusCreated {
		t.Fatalf("enroll: %d %s", code, body)
	}
	var en openapi.Enrollment
	if err := json.Unmarshal(body, &en); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(en.Key, "tdm_") || len(en.Key) < 4+32 || en.ID != "edge-1" ||
		len(en.URLs) != 1 || en.URLs[0] != baseA+"/v1-release/channels/stable?key="+en.Key {
		t.Fatalf("enrollment = %+v", en)
	}
	var stored []byte
	if err := conn.QueryRow(ctx, `select hash from cluster_enrollments where id = 'edge-1'`).Scan(&stored); err != nil || strings.Contains(string(stored), en.Key) {
		t.Fatalf("stored %x (%v): want only a hash", stored, err)
	}
	t.Logf("a key enrolled through A works on B after %v", waitStatus(t, baseB, "", en.Key, http.StatusFound, "new key"))

	// The key's ID wins over the header's; Bearer works as ?key= does.
	at := time.Now()
	if code, body := ask(t, baseB, "someone-else", en.Key, true); code != http.StatusFound {
		t.Fatalf("bearer key: %d %s", code, body)
	}
	if ev, enrolled := recordOf(t, conn, "edge-1", at); !ev || !enrolled {
		t.Errorf("enrolled cluster's record: evidence %v enrolled %v, want both", ev, enrolled)
	}
	var n int
	if err := conn.QueryRow(ctx, `select count(*) from fleet where cluster = 'someone-else'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("X-SUC-Cluster-ID beside a key made %d records of its own (%v), want 0", n, err)
	}
	// Optional: a cluster without a key is answered and recorded, but
	// its report is no evidence.
	at = time.Now()
	if code, body := ask(t, baseA, "anon-1", "", false); code != http.StatusFound {
		t.Fatalf("no key, optional: %d %s", code, body)
	}
	if ev, enrolled := recordOf(t, conn, "anon-1", at); ev || enrolled {
		t.Errorf("unenrolled cluster's record: evidence %v enrolled %v, want neither", ev, enrolled)
	}
	// Evidence counts the enrolled cluster alone (both were on the
	// channel before it first told its version).
	if _, err := conn.Exec(ctx, `update fleet set first_seen = first_seen - interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rows, _, err := stA.EvidenceCounts(ctx, now.Add(-time.Hour), now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	told := 0
	for _, r := range rows {
		if r.Channel == "stable" {
			told += r.Clusters
		}
	}
	if told != 1 {
		t.Errorf("evidence counts %d clusters on stable, want the enrolled one alone", told)
	}
	code, body = apiCall(t, baseA, http.MethodGet, "/api/v1/fleet/clusters/edge-1", admin, "")
	if code != http.StatusOK || !strings.Contains(string(body), `"enrolled":true`) {
		t.Errorf("fleet record of edge-1: %d %s, want enrolled true", code, body)
	}

	// A wrong key is refused as a credential: 401 of its own type.
	code, wrong := ask(t, baseA, "edge-1", "tdm_wrong", false)
	if code != http.StatusUnauthorized || !strings.Contains(wrong, `"type":"urn:tidemark:problem:enrollment"`) {
		t.Fatalf("wrong key: %d %s, want 401 enrollment problem", code, wrong)
	}
	if code, body := apiCall(t, baseB, http.MethodDelete, "/api/v1/fleet/enrollments/edge-1", admin, ""); code != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", code, body)
	}
	t.Logf("a key revoked through B is refused on A after %v", waitStatus(t, baseA, "", en.Key, http.StatusUnauthorized, "revoked key"))
	// Refused keys count against the address: 429 once past the limit.
	for range core.AuthFailLimit {
		code, _ = ask(t, baseA, "", en.Key, true)
	}
	if code != http.StatusTooManyRequests {
		t.Errorf("after %d refused keys: %d, want 429", core.AuthFailLimit+2, code)
	}
}

// TestEnrollmentRequired: with fleet.enrollment required, a cluster ID
// without a key is 401 enrollment (and not a failed credential); a request
// with no cluster ID is answered as anonymous.
func TestEnrollmentRequired(t *testing.T) {
	u := storetest.URL(t)
	base, st := enrolledReplica(t, u, enroll.Required)
	key, err := st.Enroll(context.Background(), "edge-2", nil)
	if err != nil {
		t.Fatal(err)
	}
	for range core.AuthFailLimit + 2 {
		code, body := ask(t, base, "edge-2", "", false)
		if code != http.StatusUnauthorized || !strings.Contains(body, "urn:tidemark:problem:enrollment") || !strings.Contains(body, "?key=") {
			t.Fatalf("cluster ID without a key: %d %s, want 401 enrollment saying to add ?key=", code, body)
		}
	}
	if code, body := ask(t, base, "", "", false); code != http.StatusFound {
		t.Errorf("no cluster ID: %d %s, want 302 as anonymous", code, body)
	}
	waitStatus(t, base, "edge-2", key, http.StatusFound, "enrolled key")
}

// TestEnrollmentAnswersMatchTheSpec: every answer of the enrollment
// routes, of a channel URL refusing a key, and of the status route is the
// one openapi.yaml describes.
func TestEnrollmentAnswersMatchTheSpec(t *testing.T) {
	_, st, srv := enrolledServer(t, storetest.URL(t), enroll.Required)
	ts := newValidatingServer(t, srv)
	admin, err := st.CreateToken(context.Background(), "root", []string{"admin"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{http.MethodPost, "/api/v1/fleet/enrollments", `{"id":"edge-1","channels":["stable"]}`, http.StatusCreated},
		{http.MethodPost, "/api/v1/fleet/enrollments", `{"id":"edge-1"}`, http.StatusConflict},
		{http.MethodPost, "/api/v1/fleet/enrollments", `{"id":"edge-2","channels":["nope"]}`, http.StatusBadRequest},
		{http.MethodPost, "/api/v1/fleet/enrollments", `{"id":"bad id"}`, http.StatusBadRequest},
		{http.MethodGet, "/api/v1/status", "", http.StatusOK},
		{http.MethodDelete, "/api/v1/fleet/enrollments/edge-1", "", http.StatusNoContent},
		{http.MethodDelete, "/api/v1/fleet/enrollments/edge-9", "", http.StatusNotFound},
	} {
		if code, body := apiCall(t, ts.URL, c.method, c.path, admin, c.body); code != c.want {
			t.Errorf("%s %s %s: %d %s, want %d", c.method, c.path, c.body, code, body, c.want)
		}
	}
	if code, body := ask(t, ts.URL, "edge-3", "", false); code != http.StatusUnauthorized {
		t.Errorf("a cluster ID without a key: %d %s", code, body)
	}
	if code, body := ask(t, ts.URL, "", "tdm_nope", true); code != http.StatusUnauthorized {
		t.Errorf("a wrong key: %d %s", code, body)
	}
	code, body := apiCall(t, ts.URL, http.MethodGet, "/api/v1/status", admin, "")
	if code != http.StatusOK || !strings.Contains(string(body), `"digest":"`+strings.Repeat("ab", 32)+`"`) || !strings.Contains(string(body), `"version":"test"`) {
		t.Errorf("status: %d %s", code, body)
	}
}

// TestEnrollmentOffIgnoresKeys: with fleet.enrollment unset, a key (even
// a wrong one) is not looked at: the request is answered as before.
func TestEnrollmentOffIgnoresKeys(t *testing.T) {
	base, _ := enrolledReplica(t, storetest.URL(t), enroll.Off)
	for _, bearer := range []bool{false, true} {
		if code, body := ask(t, base, "edge-1", "tdm_wrong", bearer); code != http.StatusFound {
			t.Errorf("a key with enrollment off (bearer %v): %d %s, want 302", bearer, code, body)
		}
	}
}
