package cli

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/tidemark-dev/tidemark/openapi"
)

// runCmd runs one of Commands' commands with env and returns its error and
// output.
func runCmd(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	e := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: func(k string) string { return env[k] }}
	root := &cobra.Command{Use: "tidemark", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(Commands(e)...)
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// TestAReadWithoutATokenNamesScopeRead: evidence (a read that needs a
// token) asked without one names the scope to create, not an empty one.
func TestAReadWithoutATokenNamesScopeRead(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"title":"Unauthorized","detail":"no bearer token"}`))
	}))
	defer srv.Close()
	_, err := runCmd(t, map[string]string{"TIDEMARK_SERVER": srv.URL}, "evidence", "stable")
	want := "401: TIDEMARK_TOKEN is not set: set it to a token with scope read (tidemark token create --name NAME --scope read)"
	if err == nil || err.Error() != want {
		t.Errorf("evidence without a token: %v, want %q", err, want)
	}
}

// TestANoServerSaysHowToPointElsewhere: a refused connection says where it
// went and how to choose the server.
func TestANoServerSaysHowToPointElsewhere(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = runCmd(t, map[string]string{"TIDEMARK_SERVER": "http://" + addr}, "channels")
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "--server or TIDEMARK_SERVER") {
		t.Errorf("channels with no server: %v", err)
	}
}

// TestChannelsSayWhatARolloutAnswers: during a rollout the table's version
// is the target, and a line under it says what a request with no cluster
// ID gets.
func TestChannelsSayWhatARolloutAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/channels":
			w.Write([]byte(`[{"name":"v1.33","source":"k3s","stream":"released","pinned":true,"version":"v1.33.4+k3s1",
				"rollout":{"channel":"v1.33","from":"v1.33.6+k3s2","to":"v1.33.4+k3s1","state":"running","percent":10,"step":1,"steps":[10,100]}},
				{"name":"stable","source":"k3s","stream":"released","pinned":false,"version":"v1.33.6+k3s2","rollout":null}]`))
		default:
			w.Write([]byte(`{"changes":[]}`))
		}
	}))
	defer srv.Close()
	out, err := runCmd(t, map[string]string{"TIDEMARK_SERVER": srv.URL}, "channels")
	if err != nil {
		t.Fatal(err)
	}
	want := "\nv1.33: rolling out v1.33.4+k3s1: 10 %; a request with no cluster ID gets v1.33.6+k3s2\n"
	if !strings.HasSuffix(out, want) || strings.Count(out, "rolling out") != 1 {
		t.Errorf("channels printed\n%s\nwant it to end with %q", out, want)
	}
}

// TestAPinSaysWhatItDid: a pin to the version the configuration fixes
// says so rather than "V -> V".
func TestAPinSaysWhatItDid(t *testing.T) {
	v := func(s string) *string { return &s }
	for _, tc := range []struct {
		name          string
		before, after openapi.Channel
		etags         [2]string
		want          string
	}{
		{"a move", openapi.Channel{Version: v("v1.33.6+k3s1")}, openapi.Channel{Version: v("v1.34.1+k3s1"), Pinned: true}, [2]string{`"1"`, `"2"`},
			"stable: v1.33.6+k3s1 -> v1.34.1+k3s1 (pinned)\n"},
		{"the version the configuration fixes", openapi.Channel{Version: v("v1.33.6+k3s1"), Pinned: true}, openapi.Channel{Version: v("v1.33.6+k3s1"), Pinned: true}, [2]string{`"0"`, `"1"`},
			"stable: pinned to v1.33.6+k3s1, which it already served (fixed in the configuration); the pin now decides (tidemark unpin stable hands it back)\n"},
		{"the pin in place", openapi.Channel{Version: v("v1.33.6+k3s1"), Pinned: true}, openapi.Channel{Version: v("v1.33.6+k3s1"), Pinned: true}, [2]string{`"1"`, `"1"`},
			"stable: already pinned to v1.33.6+k3s1\n"},
	} {
		var out bytes.Buffer
		if err := printPin(&Env{Stdout: &out}, "stable", tc.before, tc.after, false, tc.etags[0], tc.etags[1]); err != nil {
			t.Fatal(err)
		}
		if out.String() != tc.want {
			t.Errorf("%s: printed %q, want %q", tc.name, out.String(), tc.want)
		}
	}
}
