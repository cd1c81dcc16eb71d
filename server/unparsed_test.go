package server

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/tidemark-dev/tidemark/openapi"
)

func TestUnparsedTagsAreListedWithWhy(t *testing.T) {
	_, ts, _ := newTestServer(t, k3sSnapshot(t), "")
	res, body := get(t, ts, "/api/v1/sources/k3s/unparsed")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	var tags []openapi.Unparsed
	if err := json.Unmarshal(body, &tags); err != nil {
		t.Fatal(err)
	}
	if len(tags) != 2 || tags[0].Tag != "latest" || tags[1].Tag != "sha256-0123.sig" || tags[0].Error == "" || tags[1].Error == "" {
		t.Errorf("unparsed %+v, want latest and sha256-0123.sig by name, each with why", tags)
	}

	res, body = get(t, ts, "/api/v1/sources/nope/unparsed")
	var p openapi.Problem
	if err := json.Unmarshal(body, &p); err != nil || res.StatusCode != http.StatusNotFound || p.Param != "source" {
		t.Errorf("unknown source: %d %s, want 404 naming the source parameter", res.StatusCode, body)
	}
}

// TestEmptyQueryValuesAreUnset: clients fill the contract's template
// ?stream=&constraint= literally; empty means no filter, not a bad stream.
func TestEmptyQueryValuesAreUnset(t *testing.T) {
	_, ts, _ := newTestServer(t, k3sSnapshot(t), "")
	_, all := get(t, ts, "/api/v1/sources/k3s/versions")
	res, body := get(t, ts, "/api/v1/sources/k3s/versions?stream=&constraint=")
	if res.StatusCode != http.StatusOK || string(body) != string(all) {
		t.Errorf("?stream=&constraint=: %d, same list as no parameters: %v", res.StatusCode, string(body) == string(all))
	}
}
