package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/jackc/pgx/v5"
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
