package indexer

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/tidemark-dev/tidemark/resolver"
)

// TestUnreachableRegistryIsSaidPlainly: a registry nobody listens on gives a
// one-line "registry ... unreachable" error, classed as Unavailable.
func TestUnreachableRegistryIsSaidPlainly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := ln.Addr().String()
	ln.Close() // nothing listens there now: connections are refused

	src := testSource(t, "app", host+"/app")
	ix, err := New(Options{Sources: []Source{src}, Store: unusedStore{}, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	ix.retry = fastRetry
	_, _, err = list(t, ix)
	if err == nil {
		t.Fatal("listing an unreachable registry succeeded")
	}
	want := "registry " + host + " unreachable: cannot connect: "
	if !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q, want one line starting %q", err, want)
	}
	if !errors.Is(err, resolver.ErrUnavailable) {
		t.Errorf("error %v is not resolver.ErrUnavailable", err)
	}
}
