package main

import (
	"slices"
	"testing"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// TestDemoServesTheExampleChannels holds `tidemark demo` to what its help and
// the README promise: the channels of deploy/examples/tidemark.yaml, so a
// person trying the demo can ask every channel the example names, then
// docs/promotion.md's canary and promoted.
func TestDemoServesTheExampleChannels(t *testing.T) {
	example, err := config.Load("../../deploy/examples/tidemark.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	demo, err := config.Parse("demo.yaml", []byte(demoConfig("127.0.0.1:5000", "127.0.0.1:8080", "http://127.0.0.1:9/")), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := func(cs []catalog.Channel) []string {
		var n []string
		for _, c := range cs {
			n = append(n, c.Name)
		}
		return n
	}
	if got, want := names(demo.Channels), append(names(example.Channels), "canary", "promoted"); !slices.Equal(got, want) {
		t.Errorf("demo channels %v, want the example's and the promotion example's %v", got, want)
	}
}
