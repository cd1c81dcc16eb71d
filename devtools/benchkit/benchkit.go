// Package benchkit holds what the bench drivers under devtools/cmd share:
// reading a replica's /metrics and a process's peak memory.
package benchkit

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// Scrape is base's /metrics text; "" when it cannot be read.
func Scrape(base string) string {
	res, err := http.Get(base + "/metrics")
	if err != nil {
		return ""
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// Metric is the value of series (its name and labels, as exposed) in a
// /metrics body, and whether it is there.
func Metric(body, series string) (string, bool) {
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// MetricValue is Metric as a number; 0 when absent.
func MetricValue(body, series string) float64 {
	v, _ := Metric(body, series)
	f, _ := strconv.ParseFloat(v, 64)
	return f
}

// PeakRSS is the highest resident set size pid has had (VmHWM), in bytes;
// 0 when /proc cannot say.
func PeakRSS(pid int) int64 { return procStatus(pid, "VmHWM:") }

// RSS is pid's resident set size now (VmRSS), in bytes; 0 when /proc
// cannot say.
func RSS(pid int) int64 { return procStatus(pid, "VmRSS:") }

func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// Found sends req with c and reads the answer whole; an error unless it
// is the 302 a channel URL answers.
func Found(c *http.Client, req *http.Request) error {
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusFound {
		return fmt.Errorf("channel URL: %d", res.StatusCode)
	}
	return nil
}
