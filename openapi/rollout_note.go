package openapi

import "fmt"

// Note says in words what a channel URL answers during ro, beside
// the channel's version (its target): "rolling out V: 10 %; a request
// with no cluster ID gets W". "" when no rollout is under way.
func (ro *Rollout) Note() string {
	if ro == nil {
		return ""
	}
	switch ro.State {
	case "running", "paused":
		paused := ""
		if ro.State == "paused" {
			paused = " (paused)"
		}
		return fmt.Sprintf("rolling out %s: %d %%%s; a request with no cluster ID gets %s", ro.To, ro.Percent, paused, ro.From)
	case "halted":
		return fmt.Sprintf("rollout of %s halted: every request gets %s", ro.To, ro.From)
	}
	return ""
}
