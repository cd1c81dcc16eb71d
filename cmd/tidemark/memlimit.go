package main

import (
	"log/slog"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// memoryLimitRatio is the share of the container's memory limit the Go
// runtime aims to stay under; the rest is for what the runtime does not
// count (the binary's pages, the kernel's buffers for the process).
const memoryLimitRatio = 0.9

// setMemoryLimit gives the Go runtime a soft memory limit of 90% of the
// container's (cgroup v1 or v2; memlimit reads it) unless GOMEMLIMIT is
// set, and logs the limit in force. A replica's heap is mostly its
// snapshot, which changes rarely; without a limit the collector lets the
// heap grow to about twice what is live before it collects, so a container
// sized for the live set is killed for memory it never needed
// (docs/scaling.md, "Memory").
func setMemoryLimit(log *slog.Logger, getenv func(string) string) {
	if v := getenv("GOMEMLIMIT"); v != "" {
		log.Info("memory limit", "bytes", debug.SetMemoryLimit(-1), "from", "GOMEMLIMIT="+v)
		return
	}
	limit, err := memlimit.FromCgroup()
	if err != nil { // no limit, or no cgroup to read one from
		log.Info("memory limit", "bytes", "none", "from", "cgroup", "reason", err.Error())
		return
	}
	soft := int64(float64(limit) * memoryLimitRatio)
	debug.SetMemoryLimit(soft)
	log.Info("memory limit", "bytes", soft, "from", "cgroup", "container_bytes", limit)
}
