package benchkit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// clockTick is USER_HZ, 100 on every Linux these benches run on.
const clockTick = 10 * time.Millisecond

// ProcessCPU is the user and system CPU time process pid has used so far,
// every thread's (Linux /proc/<pid>/stat, in 10 ms ticks); pid 0 is this
// process, from getrusage, to the microsecond. 0 when it cannot be read.
func ProcessCPU(pid int) time.Duration {
	if pid == 0 {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			return 0
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	_, own, _, ok := procStat(pid)
	if !ok {
		return 0
	}
	return own
}

// procStat is pid's parent, its own CPU time (utime + stime) and its
// reaped children's (cutime + cstime), from /proc/<pid>/stat.
func procStat(pid int) (ppid int, own, children time.Duration, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses, so
	// the fields are counted after its last closing parenthesis.
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, 0, 0, false
	}
	f := bytes.Fields(b[end+1:])
	if len(f) < 15 {
		return 0, 0, 0, false
	}
	n := func(i int) int64 { v, _ := strconv.ParseInt(string(f[i]), 10, 64); return v }
	return int(n(1)), time.Duration(n(11)+n(12)) * clockTick, time.Duration(n(13)+n(14)) * clockTick, true
}

// PostgresCPU finds the Postgres cluster dsn reaches on this machine (the
// postmaster, parent of the backend it connects to) and returns what reads
// the CPU time the whole cluster has used so far: the postmaster's own,
// the backends and background workers it runs now, and those that ended,
// which it adds to its children's time when it reaps them. A backend
// ending between two reads may be counted late, not twice: read after its
// client has gone and the postmaster has reaped it (a few milliseconds).
func PostgresCPU(ctx context.Context, dsn string) (func() time.Duration, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	var backend int
	if err := conn.QueryRow(ctx, `select pg_backend_pid()`).Scan(&backend); err != nil {
		return nil, err
	}
	postmaster, _, _, ok := procStat(backend)
	if !ok {
		return nil, fmt.Errorf("postgres backend %d: not a process on this machine", backend)
	}
	return func() time.Duration { return clusterCPU(postmaster) }, nil
}

// clusterCPU is the CPU time of postmaster and every process it is the
// parent of, reaped ones included.
func clusterCPU(postmaster int) time.Duration {
	_, own, reaped, ok := procStat(postmaster)
	if !ok {
		return 0
	}
	total := own + reaped
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == postmaster {
			continue
		}
		if ppid, own, reaped, ok := procStat(pid); ok && ppid == postmaster {
			total += own + reaped
		}
	}
	return total
}

// Spread is the median of vs and their lowest and highest: what a figure
// measured over several rounds on a shared machine is reported as.
func Spread(vs []float64) (median, lo, hi float64) {
	if len(vs) == 0 {
		return 0, 0, 0
	}
	s := slices.Sorted(slices.Values(vs))
	n := len(s)
	median = s[n/2]
	if n%2 == 0 {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	return median, s[0], s[n-1]
}
