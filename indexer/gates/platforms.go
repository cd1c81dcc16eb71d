package gates

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// ParsePlatforms parses "os/arch[/variant]" strings (as in `docker buildx
// --platform`). The error names the bad entry.
func ParsePlatforms(specs []string) ([]v1.Platform, error) {
	out := make([]v1.Platform, 0, len(specs))
	for _, s := range specs {
		p, err := v1.ParsePlatform(s)
		if err != nil || p.OS == "" || p.Architecture == "" || p.OSVersion != "" || strings.ContainsAny(s, " \t") {
			return nil, fmt.Errorf("platform %q: want os/arch or os/arch/variant", s)
		}
		out = append(out, *p)
	}
	return out, nil
}

// Platforms reports which of want the manifest at ref does not hold, as
// "os/arch[/variant]" strings in want's order. An image index holds the
// platforms of its manifests; a single image holds the one its config names
// (one more request, for the config blob), or none if it names none. A want
// without a variant is held by any variant of its os/arch.
//
// Platforms makes one manifest request for an index, two for an image.
func Platforms(ctx context.Context, ref name.Reference, want []v1.Platform, opts ...remote.Option) ([]string, error) {
	if len(want) == 0 {
		return nil, nil
	}
	opts = append(opts[:len(opts):len(opts)], remote.WithContext(ctx))
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", ref, err)
	}
	var have []v1.Platform
	switch {
	case desc.MediaType.IsIndex():
		idx, err := desc.ImageIndex() // parses desc.Manifest, no request
		if err != nil {
			return nil, fmt.Errorf("index %s: %w", ref, err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, fmt.Errorf("index %s: %w", ref, err)
		}
		for _, m := range im.Manifests {
			if m.Platform != nil {
				have = append(have, *m.Platform)
			}
		}
	case desc.MediaType.IsImage():
		img, err := desc.Image()
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", ref, err)
		}
		m, err := img.Manifest()
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", ref, err)
		}
		if m.Config.MediaType.IsConfig() {
			cf, err := img.ConfigFile()
			if err != nil {
				return nil, fmt.Errorf("image config %s: %w", ref, err)
			}
			if p := cf.Platform(); p != nil {
				have = append(have, *p)
			}
		}
	}
	return missing(want, have), nil
}

func missing(want, have []v1.Platform) []string {
	var out []string
	for _, w := range want {
		held := false
		for _, h := range have {
			if h.Satisfies(w) {
				held = true
				break
			}
		}
		if !held {
			out = append(out, w.String())
		}
	}
	return out
}
