package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// TestServeSetsItsMemoryLimit runs serve as a process of its own (the
// limit is the process's) and reads the limit back from its metrics: the
// runtime's own when GOMEMLIMIT is set, else 90% of the container's
// memory limit, or none when the container has none, as memlimit reads
// this machine's cgroup.
func TestServeSetsItsMemoryLimit(t *testing.T) {
	env := processEnv(t)

	container, err := memlimit.FromCgroup()
	var want, from string
	switch {
	case err == nil:
		want, from = fmt.Sprint(int64(float64(container)*memoryLimitRatio)), "cgroup"
	case errors.Is(err, memlimit.ErrNoLimit) || errors.Is(err, memlimit.ErrCgroupsNotSupported):
		want, from = "9.223372036854776e+18", "cgroup" // math.MaxInt64: no limit
	default:
		t.Fatalf("reading this machine's cgroup: %v", err)
	}
	for _, tc := range []struct{ name, gomemlimit, want, from string }{
		{"GOMEMLIMIT set: the runtime's", "300MiB", "3.145728e+08", "GOMEMLIMIT=300MiB"},
		{"GOMEMLIMIT unset: the container's", "", want, from},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env["GOMEMLIMIT"] = tc.gomemlimit
			_, base, logs := startProcess(t, env)
			res, err := http.Get(base + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			m := regexp.MustCompile(`(?m)^go_gc_gomemlimit_bytes (\S+)$`).FindStringSubmatch(string(b))
			if m == nil {
				t.Fatalf("/metrics has no go_gc_gomemlimit_bytes")
			}
			if m[1] != tc.want {
				t.Errorf("go_gc_gomemlimit_bytes %s, want %s", m[1], tc.want)
			}
			if !strings.Contains(logs.String(), `"memory limit"`) || !strings.Contains(logs.String(), tc.from) {
				t.Errorf("no memory limit line from %s in the log:\n%s", tc.from, logs.String())
			}
		})
	}
}
