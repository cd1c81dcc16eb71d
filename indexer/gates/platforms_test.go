package gates_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/tidemark-dev/tidemark/indexer/gates"
)

func TestPlatforms(t *testing.T) {
	r := newRegistry(t)
	complete := r.index("v1.33.6-k3s1", "linux/amd64", "linux/arm64/v8", "linux/arm/v7")
	noArm64 := r.index("v1.33.7-k3s1", "linux/amd64", "linux/arm/v7")
	single := r.image("v1.33.8-k3s1", "linux", "amd64", "")
	bare := r.image("v1.33.9-k3s1", "", "", "") // a config naming no platform

	for _, tc := range []struct {
		name string
		d    v1.Hash
		want []string
		miss []string
	}{
		{"complete index holds every platform", complete, []string{"linux/amd64", "linux/arm64", "linux/arm/v7"}, nil},
		{"a variant asked for must match", complete, []string{"linux/arm/v6"}, []string{"linux/arm/v6"}},
		{"index without arm64 misses it", noArm64, []string{"linux/amd64", "linux/arm64", "linux/s390x"}, []string{"linux/arm64", "linux/s390x"}},
		{"single image holds its config's platform", single, []string{"linux/amd64"}, nil},
		{"single image misses every other", single, []string{"linux/amd64", "linux/arm64"}, []string{"linux/arm64"}},
		{"image whose config names none misses all", bare, []string{"linux/amd64"}, []string{"linux/amd64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := gates.ParsePlatforms(tc.want)
			if err != nil {
				t.Fatal(err)
			}
			before := r.rt.n.Load()
			got, err := gates.Platforms(context.Background(), r.repo.Digest(tc.d.String()), want, r.opts()...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.miss, got); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
			if n := r.rt.n.Load() - before; n > 2 {
				t.Errorf("%d requests, want at most 2 (manifest, and config for an image)", n)
			}
		})
	}
}

func TestParsePlatforms(t *testing.T) {
	if _, err := gates.ParsePlatforms([]string{"linux/amd64", "linux/arm/v7"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"linux", "linux/", "/amd64", "linux/arm/v7/x", "windows/amd64:10.0", "linux/ amd64"} {
		_, err := gates.ParsePlatforms([]string{"linux/amd64", bad})
		if err == nil || !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("ParsePlatforms(%q) error = %v, want one naming it", bad, err)
		}
	}
}
