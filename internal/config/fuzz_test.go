package config

import (
	"errors"
	"os"
	"testing"

	"github.com/tidemark-dev/tidemark/resolver"
)

// FuzzParse checks that no input panics the loader, and that what it
// rejects it rejects with a *Error that wraps ErrInvalid and has lines.
func FuzzParse(f *testing.F) {
	for _, file := range []string{"testdata/k3s-channel.yaml", "testdata/rke2-channels.yaml", "../../deploy/examples/tidemark.yaml"} {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(base + "channels:\n  - {name: a, source: k3s, latest: v1.2.3-k3s1, excludeRegexp: '(x'}\n"))
	f.Add([]byte("a: &a [*a, *a]\nsources: *a\n"))
	f.Add([]byte("defaults: {source: k3s}\nchannels: [{name: x}]\nregistries: {docker.io: {rate_limit: .5}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("f.yaml", data, nil)
		if err == nil {
			if cfg == nil {
				t.Fatal("nil config without an error")
			}
			return
		}
		var ce *Error
		if !errors.As(err, &ce) || len(ce.Problems) == 0 || !errors.Is(err, resolver.ErrInvalid) {
			t.Fatalf("error %T %q: want a *Error with problems wrapping ErrInvalid", err, err)
		}
	})
}
