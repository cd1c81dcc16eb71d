package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startProfiles writes profiles of this process for benchmarks
// (devtools/cmd/benchscale -profile): a CPU profile to
// TIDEMARK_CPU_PROFILE from now until the returned stop is called, and a
// heap profile to TIDEMARK_HEAP_PROFILE when it is (what is in use as of
// the last collection, and every allocation since start: inuse_space and
// alloc_space). An empty path profiles nothing.
func startProfiles(getenv func(string) string) (stop func(), err error) {
	stopCPU, err := startCPUProfile(getenv("TIDEMARK_CPU_PROFILE"))
	if err != nil {
		return nil, err
	}
	heap := getenv("TIDEMARK_HEAP_PROFILE")
	return func() {
		stopCPU()
		if heap == "" {
			return
		}
		if f, err := os.Create(heap); err == nil {
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
	}, nil
}

// startCPUProfile writes a CPU profile of this process to path until the
// returned stop is called. An empty path profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("TIDEMARK_CPU_PROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("TIDEMARK_CPU_PROFILE %s: %w", path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
