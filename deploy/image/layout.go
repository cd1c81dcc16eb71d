package image

import (
	"errors"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// refName is the standard OCI layout annotation naming an index entry.
const refName = "org.opencontainers.image.ref.name"

// WriteLayout writes idx as the only entry of a fresh OCI layout at dir
// (any earlier content is removed), tagged with version.
func WriteLayout(dir string, idx v1.ImageIndex, version string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("image: clear %s: %w", dir, err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("image: layout %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refName: version})); err != nil {
		return fmt.Errorf("image: layout %s: %w", dir, err)
	}
	return nil
}

// ReadLayout returns the image index a WriteLayout stored at dir, and its tag.
func ReadLayout(dir string) (v1.ImageIndex, string, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, "", fmt.Errorf("image: layout %s: %w", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, "", fmt.Errorf("image: layout %s: %w", dir, err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, "", fmt.Errorf("image: layout %s: %w", dir, err)
	}
	if len(m.Manifests) != 1 {
		return nil, "", fmt.Errorf("image: layout %s holds %d entries, want the one image index make image writes", dir, len(m.Manifests))
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		return nil, "", fmt.Errorf("image: layout %s: %w", dir, err)
	}
	return idx, m.Manifests[0].Annotations[refName], nil
}

// Push uploads the layout at dir to repo (host/path), tagged with the
// layout's version, and returns the pushed reference by digest. Credentials
// come from the usual docker config (authn.DefaultKeychain); loopback
// registries are spoken to over plain HTTP.
func Push(dir, repo string) (string, error) {
	if repo == "" {
		return "", errors.New("image: push needs REGISTRY=host/repository")
	}
	idx, tag, err := ReadLayout(dir)
	if err != nil {
		return "", err
	}
	if tag == "" {
		return "", fmt.Errorf("image: layout %s has no version tag", dir)
	}
	ref, err := name.NewTag(repo + ":" + tag)
	if err != nil {
		return "", fmt.Errorf("image: REGISTRY %q: %w", repo, err)
	}
	if err := remote.WriteIndex(ref, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return "", fmt.Errorf("image: push %s: %w", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return "", fmt.Errorf("image: digest: %w", err)
	}
	return ref.Context().Digest(d.String()).String(), nil
}

// Current reports whether the layout at dir holds the image of version
// built from revision (so make image-push need not build it again); an
// error says why not.
func Current(dir, version, revision string) error {
	idx, tag, err := ReadLayout(dir)
	if err != nil {
		return err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	if got := m.Annotations["org.opencontainers.image.revision"]; tag != version || got != revision {
		return fmt.Errorf("image: layout %s is %s of %s, not %s of %s", dir, tag, got, version, revision)
	}
	return nil
}
