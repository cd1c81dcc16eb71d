package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// cpuSample is the CPU time each process on the machine has used, by pid
// (Linux /proc). Postgres backends that exit between two samples are in
// their postmaster's children's time, which it adds when it reaps them.
type cpuSample map[int]procCPU

type procCPU struct {
	comm string
	cpu  time.Duration // own user + system time, plus reaped children's
}

// clockTick is USER_HZ, which is 100 on every Linux this runs on.
const clockTick = 10 * time.Millisecond

func sampleCPU() cpuSample {
	s := cpuSample{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after
		// its closing parenthesis.
		open, end := strings.IndexByte(string(b), '('), strings.LastIndexByte(string(b), ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(string(b[end+1:]))
		if len(f) < 15 {
			continue
		}
		var ticks int64
		for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime
			n, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += n
		}
		s[pid] = procCPU{comm: string(b[open+1 : end]), cpu: time.Duration(ticks) * clockTick}
	}
	return s
}

// since is the CPU time used between from and s, by label: the named
// pids get their names, every other process its command name.
func (s cpuSample) since(from cpuSample, names map[int]string) map[string]time.Duration {
	out := map[string]time.Duration{}
	for pid, p := range s {
		label := names[pid]
		if label == "" {
			label = p.comm
		}
		d := p.cpu
		if old, ok := from[pid]; ok && old.comm == p.comm {
			d -= old.cpu
		}
		if d > 0 {
			out[label] += d
		}
	}
	return out
}

// cpuLine prints where CPU went, most first, with the wall time's share of
// the machine's cores.
func cpuLine(used map[string]time.Duration, wall time.Duration, cores int) string {
	type kv struct {
		k string
		v time.Duration
	}
	var all []kv
	var total time.Duration
	for k, v := range used {
		all = append(all, kv{k, v})
		total += v
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v })
	// The five that used most, and the replicas whatever they used.
	var parts []string
	for i, e := range all {
		if i >= 5 && e.k != "A" && e.k != "B" {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.1f s", e.k, e.v.Seconds()))
	}
	return fmt.Sprintf("%.1f CPU-s of %.1f (%d cores): %s", total.Seconds(), wall.Seconds()*float64(cores), cores, strings.Join(parts, ", "))
}
