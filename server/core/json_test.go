package core

import (
	"testing"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// TestAVersionSaysPlainlyWhyChannelsSkipIt: a blocked version is not
// servable (never "blocked":true with "servable":true), and a juju
// development build says it is one.
func TestAVersionSaysPlainlyWhyChannelsSkipIt(t *testing.T) {
	p, err := resolver.NewParser(resolver.SchemeJuju, "")
	if err != nil {
		t.Fatal(err)
	}
	src := catalog.Source{Name: "juju", Image: "jujusolutions/jujud-operator", Parser: p}
	view := func(tag string, blocked bool) resolver.VersionView {
		v := resolver.VersionView{Tag: src.Classify(tag), Servable: true}
		if blocked {
			v.Block("bad agent")
		}
		return v
	}
	if j := VersionJSON(view("3.6.2", true)); !j.Blocked || j.Servable {
		t.Errorf("a blocked version: blocked %v servable %v, want blocked and not servable", j.Blocked, j.Servable)
	}
	if j := VersionJSON(view("3.6.2", false)); j.Blocked || !j.Servable || j.DevBuild {
		t.Errorf("a plain release: %+v", j)
	}
	if j := VersionJSON(view("3.6.1.1", false)); !j.DevBuild || j.Stream != "released" {
		t.Errorf("a development build: dev_build %v stream %s, want dev_build in its stream", j.DevBuild, j.Stream)
	}
}
