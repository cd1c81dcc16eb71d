package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/tidemark-dev/tidemark/internal/distreg"
)

// repoName and tagName are the shape of the seeded registry: repository i
// is bench/rNNNN, and tag j of each is 1.<j/100>.<j%100>.
func repoName(i int) string { return fmt.Sprintf("bench/r%04d", i) }
func tagName(j int) string  { return fmt.Sprintf("1.%d.%d", j/100, j%100) }

// seeded starts a distribution registry over a storage directory cached under
// cache (tmp/benchscale/registry-<repos>x<tags>), seeding it first when the
// cache is empty. One small image is pushed through the registry; every other
// repository and tag is written straight into the registry's filesystem
// layout as links to it, which is what a tag push leaves behind, at a
// fraction of the cost of a million manifest PUTs.
func seeded(ctx context.Context, cache string, repos, tags int) (*distreg.Registry, time.Duration, error) {
	dir := filepath.Join(cache, fmt.Sprintf("registry-%dx%d", repos, tags))
	marker := filepath.Join(dir, "seeded")
	if _, err := os.Stat(marker); err == nil {
		reg, err := distreg.Start(ctx, dir)
		return reg, 0, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, 0, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, 0, err
	}
	start := time.Now()
	reg, err := distreg.Start(ctx, dir)
	if err != nil {
		return nil, 0, err
	}
	img, err := random.Image(256, 1)
	if err != nil {
		reg.Stop()
		return nil, 0, err
	}
	digest, err := distreg.PushImage(ctx, img, reg.Host, repoName(0), []string{tagName(0)}, 1)
	if err != nil {
		reg.Stop()
		return nil, 0, err
	}
	blobs, err := imageBlobs(img)
	if err != nil {
		reg.Stop()
		return nil, 0, err
	}
	root := filepath.Join(dir, "storage", "docker", "registry", "v2", "repositories")
	if err := writeLayout(root, repos, tags, digest, blobs); err != nil {
		reg.Stop()
		return nil, 0, fmt.Errorf("seeding %s: %w", root, err)
	}
	if err := os.WriteFile(marker, []byte(digest.String()+"\n"), 0o644); err != nil {
		reg.Stop()
		return nil, 0, err
	}
	return reg, time.Since(start), nil
}

// imageBlobs are the layer and config digests a repository must link to
// serve the image's blobs.
func imageBlobs(img v1.Image) ([]v1.Hash, error) {
	cfg, err := img.ConfigName()
	if err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	out := []v1.Hash{cfg}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// writeLayout writes, for every repository, the blob and manifest revision
// links, and for every tag its current link (what GET /tags/list reads and
// GET /manifests/<tag> follows), with a few writers in parallel.
func writeLayout(root string, repos, tags int, manifest v1.Hash, blobs []v1.Hash) error {
	link := []byte(manifest.String())
	write := func(path string, b []byte) error {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		return os.WriteFile(path, b, 0o644)
	}
	work := make(chan int)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range work {
				repo := filepath.Join(root, filepath.FromSlash(repoName(i)))
				err := write(filepath.Join(repo, "_manifests", "revisions", "sha256", manifest.Hex, "link"), link)
				for _, b := range blobs {
					if err == nil {
						err = write(filepath.Join(repo, "_layers", "sha256", b.Hex, "link"), []byte(b.String()))
					}
				}
				for j := 0; j < tags && err == nil; j++ {
					err = write(filepath.Join(repo, "_manifests", "tags", tagName(j), "current", "link"), link)
				}
				if err != nil {
					select {
					case errs <- fmt.Errorf("%s: %w", strings.TrimPrefix(repo, root), err):
					default:
					}
				}
			}
		})
	}
	for i := range repos {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}
