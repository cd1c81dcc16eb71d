package resolver

import (
	"testing"
	"time"
)

func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestWindowsAcrossDaylightSaving: a 09:00-17:00 Berlin window opens at
// 09:00 local time on the days daylight saving starts and ends (07:00 and
// 08:00 UTC), a window past midnight belongs to the day it starts, and
// NextWindow finds the next start.
func TestWindowsAcrossDaylightSaving(t *testing.T) {
	loc := berlin(t)
	days, _ := ParseDays([]string{"sun", "mon"})
	office := Window{Days: days, Start: 9 * 60, End: 17 * 60, Location: loc}
	for _, tc := range []struct {
		at   string
		open bool
	}{
		{"2026-03-29T06:59:00Z", false}, // Sunday, the day summer time starts: 08:59 CEST
		{"2026-03-29T07:00:00Z", true},  // 09:00 CEST
		{"2026-03-29T14:59:00Z", true},
		{"2026-03-29T15:00:00Z", false}, // 17:00 CEST
		{"2026-10-25T07:59:00Z", false}, // Sunday, the day summer time ends: 08:59 CET
		{"2026-10-25T08:00:00Z", true},  // 09:00 CET
		{"2026-10-27T08:00:00Z", false}, // Tuesday: not a window day
	} {
		at, _ := time.Parse(time.RFC3339, tc.at)
		if got := office.Open(at); got != tc.open {
			t.Errorf("%s (%s Berlin): open %v, want %v", tc.at, at.In(loc).Format("Mon 15:04 MST"), got, tc.open)
		}
	}
	fri, _ := ParseDays([]string{"fri"})
	night := Window{Days: fri, Start: 22 * 60, End: 2 * 60, Location: time.UTC}
	for _, tc := range []struct {
		at   string
		open bool
	}{{"2026-11-27T22:30:00Z", true}, {"2026-11-28T01:59:00Z", true}, {"2026-11-28T02:00:00Z", false}, {"2026-11-28T22:30:00Z", false}, {"2026-11-27T01:00:00Z", false}} {
		at, _ := time.Parse(time.RFC3339, tc.at)
		if got := night.Open(at); got != tc.open {
			t.Errorf("past midnight %s: open %v, want %v", tc.at, got, tc.open)
		}
	}
	from, _ := time.Parse(time.RFC3339, "2026-03-28T12:00:00Z") // a Saturday
	if next := NextWindow([]Window{office}, from); !next.Equal(time.Date(2026, 3, 29, 7, 0, 0, 0, time.UTC)) {
		t.Errorf("next window after Saturday noon: %s, want 2026-03-29T07:00Z", next)
	}
	if !InWindow(nil, from) {
		t.Error("a channel without windows may always move")
	}
}

// TestFreezeCovers: globs, the from/until bounds, and a cancelled freeze.
func TestFreezeCovers(t *testing.T) {
	t0 := time.Date(2026, 12, 20, 0, 0, 0, 0, time.UTC)
	f := Freeze{Channels: []string{"v1.*", "stable"}, From: t0, Until: t0.Add(24 * time.Hour)}
	for _, tc := range []struct {
		ch   string
		at   time.Time
		want bool
	}{{"v1.33", t0, true}, {"stable", t0.Add(time.Hour), true}, {"latest", t0, false}, {"v1.33", t0.Add(-time.Second), false}, {"v1.33", t0.Add(24 * time.Hour), false}} {
		if got := f.Covers(tc.ch, tc.at); got != tc.want {
			t.Errorf("%s at %s: %v, want %v", tc.ch, tc.at, got, tc.want)
		}
	}
	f.CancelledAt = t0
	if f.Covers("stable", t0.Add(time.Hour)) {
		t.Error("a cancelled freeze still covers")
	}
}
