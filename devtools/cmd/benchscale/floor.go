package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/internal/distreg"
)

// craneAll lists every repository with go-containerregistry's crane package
// (crane ls, in process), conc at a time: the least any indexer must ask of
// the registry. It returns the time and the tags listed.
func craneAll(ctx context.Context, host string, repos, conc int) (time.Duration, int, error) {
	start := time.Now()
	work := make(chan int)
	var mu sync.Mutex
	var total int
	var first error
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := range work {
				tags, err := crane.ListTags(host+"/"+repoName(i), crane.Insecure, crane.WithContext(ctx))
				mu.Lock()
				total += len(tags)
				if err != nil && first == nil {
					first = fmt.Errorf("crane ls %s: %w", repoName(i), err)
				}
				mu.Unlock()
			}
		})
	}
	for i := range repos {
		work <- i
	}
	close(work)
	wg.Wait()
	return time.Since(start), total, first
}

// copyAll COPYs one tag-shaped row per tag into a scratch table: the least
// any store must do to hold the listing.
func copyAll(ctx context.Context, url string, repos, tags int) (time.Duration, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	start := time.Now()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `create temp table copy_bench (source text, tag text, valid boolean, error text, major int, minor int, patch int,
		pre text, pre_number int, prerelease text, build int, build_meta text, canonical text, stream text,
		primary key (source, tag)) on commit drop`)
	if err != nil {
		return 0, err
	}
	cols := []string{"source", "tag", "valid", "error", "major", "minor", "patch", "pre", "pre_number", "prerelease", "build", "build_meta", "canonical", "stream"}
	i, j := 0, 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if j == tags {
			i, j = i+1, 0
		}
		if i == repos {
			return nil, nil
		}
		t := tagName(j)
		j++
		return []any{sourceName(i), t, true, "", 1, (j - 1) / 100, (j - 1) % 100, "", 0, "", 0, "", t, "released"}, nil
	})
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"copy_bench"}, cols, src); err != nil {
		return 0, fmt.Errorf("copy: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// headFloor is the digest phase's floor: a HEAD of every tag's manifest,
// conc in flight on kept-alive connections, as the indexer sends them (one
// per tag), with no store and no snapshot behind it.
type headFloor struct {
	took     time.Duration
	heads    int
	registry time.Duration // the registry's CPU time meanwhile
}

func headAll(ctx context.Context, reg *distreg.Registry, repos, tags, conc int) (headFloor, error) {
	cl := &http.Client{Transport: &http.Transport{MaxIdleConns: conc, MaxIdleConnsPerHost: conc}, Timeout: time.Minute}
	defer cl.CloseIdleConnections()
	work := make(chan string)
	var heads atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	pid := reg.PID()
	before := sampleCPU()
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for u := range work {
				err := headManifest(ctx, cl, u)
				if err != nil {
					first.CompareAndSwap(nil, &err)
					continue
				}
				heads.Add(1)
			}
		})
	}
	for i := range repos {
		for j := range tags {
			work <- fmt.Sprintf("http://%s/v2/%s/manifests/%s", reg.Host, repoName(i), tagName(j))
		}
	}
	close(work)
	wg.Wait()
	f := headFloor{took: time.Since(start), heads: int(heads.Load())}
	f.registry = sampleCPU().since(before, map[int]string{pid: "registry"})["registry"]
	if err := first.Load(); err != nil {
		return f, *err
	}
	return f, nil
}

func headManifest(ctx context.Context, cl *http.Client, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json")
	res, err := cl.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("HEAD %s: %s", u, res.Status)
	}
	return nil
}
