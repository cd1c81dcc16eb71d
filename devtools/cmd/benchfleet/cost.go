package main

import (
	"fmt"

	"github.com/tidemark-dev/tidemark/devtools/benchkit"
)

// costRows prints what an answer costs with recording off and on over the
// interleaved rounds, each as median [lowest-highest]: the replica's CPU,
// the Postgres cluster's (recording moves work there; with recording off
// it is the cluster's background work), both together, the channel URL's
// p99 and the paced requests/s. The recorded answer's goal (issue 56) is
// at most 1.3x the unrecorded one's, Tidemark and Postgres together.
func costRows(row func(name, val, note string), offs, ons []pacedResult) {
	spread := func(rs []pacedResult, f func(pacedResult) float64, format func(float64) string) (float64, string) {
		var vs []float64
		for _, r := range rs {
			vs = append(vs, f(r))
		}
		m, lo, hi := benchkit.Spread(vs)
		return m, fmt.Sprintf("%s [%s-%s]", format(m), format(lo), format(hi))
	}
	micro := func(v float64) string { return fmt.Sprintf("%.1f", v/1e3) }
	milli := func(v float64) string { return fmt.Sprintf("%.1f", v/1e6) }
	perSecond := func(v float64) string { return fmt.Sprintf("%.0f", v) }
	tm := func(r pacedResult) float64 { return float64(r.cpuPerReq) }
	pg := func(r pacedResult) float64 { return float64(r.pgPerReq) }
	both := func(r pacedResult) float64 { return float64(r.cpuPerReq + r.pgPerReq) }
	var totals [2]float64
	for i, mode := range []struct {
		name string
		rs   []pacedResult
	}{{"off", offs}, {"on", ons}} {
		_, t := spread(mode.rs, tm, micro)
		_, p := spread(mode.rs, pg, micro)
		total, b := spread(mode.rs, both, micro)
		totals[i] = total
		_, l := spread(mode.rs, func(r pacedResult) float64 { return float64(r.p99) }, milli)
		_, q := spread(mode.rs, func(r pacedResult) float64 { return r.rps }, perSecond)
		row("recording "+mode.name+": CPU/answer, Tidemark", t+" µs", "median [lowest-highest] of the rounds: utime+stime of the replica process / answers")
		row("  Postgres cluster", p+" µs", "every process of the cluster with-pg started (postmaster, backends, background), reaped ones included")
		row("  Tidemark + Postgres", b+" µs", "")
		row("  p99 / requests/s", l+" ms", q+" requests/s, paced")
	}
	if len(ons) > 0 {
		_, t := spread(ons, func(r pacedResult) float64 { return float64(r.startCPU) }, milli)
		_, p := spread(ons, func(r pacedResult) float64 { return float64(r.startPG) }, milli)
		row("start-up of a recording replica, CPU", t+" / "+p+" ms", "Tidemark / Postgres, once a start: admission reads every record, the first gauge; not in the answers' figures")
	}
	if totals[0] > 0 {
		verdict := "met"
		if totals[1] > 1.3*totals[0] {
			verdict = "NOT MET"
		}
		row("recorded/unrecorded, Tidemark + Postgres", fmt.Sprintf("%.2fx", totals[1]/totals[0]),
			fmt.Sprintf("medians' ratio; issue 56's goal <= 1.3x: %s", verdict))
	}
}
