package main

import (
	"bytes"
	"os"
	"testing"
)

// The committed file must be what the Go types say: run make kube-shapes
// after bumping k8s.io/api or adding a kind.
func TestCommittedShapesAreCurrent(t *testing.T) {
	want, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../testdata/kube-shapes.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("deploy/testdata/kube-shapes.json is stale: run make kube-shapes")
	}
}
