package capi_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/tidemark-dev/tidemark/server/capi"
)

// TestTheDocsExampleIsWhatTheHookAnswers: docs/safe-answers.md shows a
// GenerateUpgradePlan request and its answer; this sends that request to
// the hook (over the same tags the docs describe) and fails when the
// answer differs from the docs'.
func TestTheDocsExampleIsWhatTheHookAnswers(t *testing.T) {
	doc, err := os.ReadFile("../../docs/safe-answers.md")
	if err != nil {
		t.Fatal(err)
	}
	req, ans := jsonBlock(t, string(doc), "request"), jsonBlock(t, string(doc), "answer")
	code, body := post(t, hooksServer(t).URL+capi.Prefix+"/generateupgradeplan/kube-apiserver", []byte(req))
	if code != 200 {
		t.Fatalf("the docs' request: %d %s", code, body)
	}
	var got, want any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(ans), &want); err != nil {
		t.Fatalf("the docs' answer is not JSON: %v", err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Errorf("the hook answers\n%s\nand docs/safe-answers.md shows\n%s", body, ans)
	}
}

// jsonBlock is the ```json block of doc that follows the line
// "<!-- capi-<name> -->".
func jsonBlock(t *testing.T, doc, name string) string {
	t.Helper()
	_, after, ok := strings.Cut(doc, "<!-- capi-"+name+" -->\n```json\n")
	if !ok {
		t.Fatalf("docs/safe-answers.md has no capi-%s example", name)
	}
	block, _, _ := strings.Cut(after, "```")
	return block
}
