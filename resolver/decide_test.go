package resolver

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// expect is one door's outcome under each rule; "allow", "defer",
// "pending", or "refuse:<rule>".
type expect struct {
	scope, override, freeze, freezeOverride, window, windowOverride, approvals, approvalsOverride string
}

// doorTable is every door's row. A door missing from it fails
// TestEveryDoorHasARow: a new entry cannot be added without saying how
// each rule treats it.
var doorTable = map[Door]expect{
	DoorPin:             {"refuse:scope", "refuse:override", "refuse:freeze", "allow", "defer", "allow", "pending", "pending"},
	DoorUnpin:           {"refuse:scope", "refuse:override", "refuse:freeze", "allow", "defer", "allow", "pending", "pending"},
	DoorConsolePin:      {"refuse:scope", "refuse:override", "refuse:freeze", "allow", "defer", "allow", "pending", "pending"},
	DoorConsoleUnpin:    {"refuse:scope", "refuse:override", "refuse:freeze", "allow", "defer", "allow", "pending", "pending"},
	DoorSchedule:        {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "pending", "pending"},
	DoorConsoleSchedule: {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "pending", "pending"},
	DoorRolloutAdvance:  {"refuse:scope", "refuse:override", "refuse:freeze", "allow", "refuse:window", "allow", "allow", "allow"},
	DoorRolloutResume:   {"refuse:scope", "refuse:override", "refuse:freeze", "allow", "refuse:window", "allow", "allow", "allow"},
	DoorConsoleAdvance:  {"refuse:scope", "refuse:override", "refuse:freeze", "allow", "refuse:window", "allow", "allow", "allow"},
	DoorConsoleResume:   {"refuse:scope", "refuse:override", "refuse:freeze", "allow", "refuse:window", "allow", "allow", "allow"},
	DoorApplyScheduled:  {"refuse:scope", "refuse:override", "defer", "allow", "defer", "allow", "allow", "allow"},
	DoorApplyApproved:   {"refuse:scope", "refuse:override", "defer", "allow", "defer", "allow", "allow", "allow"},
	DoorPromotion:       {"refuse:scope", "refuse:override", "defer", "allow", "defer", "allow", "pending", "pending"},
	DoorRolloutPause:    {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "allow", "allow"},
	DoorRolloutHalt:     {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "allow", "allow"},
	DoorAlertHalt:       {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "allow", "allow"},
	DoorGovernorPause:   {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "allow", "allow"},
	DoorGovernorResume:  {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "allow", "allow"},
	DoorBlock:           {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "allow", "allow"},
	DoorUnblock:         {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "allow", "allow"},
	DoorYank:            {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "allow", "allow"},
}

func TestEveryDoorHasARow(t *testing.T) {
	for _, d := range Doors {
		if _, ok := doorTable[d]; !ok {
			t.Errorf("door %s has no row in the decision table: say how scope, freeze, window and approvals treat it", d)
		}
		if _, ok := doorKinds[d]; !ok {
			t.Errorf("door %s has no kind in decide.go", d)
		}
	}
	if len(doorTable) != len(Doors) {
		t.Errorf("%d rows for %d doors", len(doorTable), len(Doors))
	}
}

func outcomeText(v Verdict) string {
	if v.Outcome == Refuse {
		return "refuse:" + v.Rule
	}
	return string(v.Outcome)
}

// TestDecideEveryDoorEveryRule walks every door through every rule, one
// rule at a time, as an ordinary promoter and as an admin overriding.
func TestDecideEveryDoorEveryRule(t *testing.T) {
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC) // a Friday, 03:00
	freeze := &Freeze{ID: 7, Channels: []string{"stable"}, From: now.Add(-time.Hour), Until: now.Add(48 * time.Hour), Reason: "year end"}
	days, _ := ParseDays([]string{"mon", "tue", "wed", "thu", "fri"})
	closed := []Window{{Days: days, Start: 9 * 60, End: 17 * 60, Location: time.UTC}}
	promoter := Principal{Name: "ci", Scopes: []string{"promote"}}
	admin := Principal{Name: "root", Scopes: []string{"admin"}}
	limited := Principal{Name: "dev-bot", Scopes: []string{"promote"}, Channels: []string{"dev-*"}}
	for _, d := range Doors {
		row := doorTable[d]
		cases := []struct {
			rule string
			p    Principal
			c    Change
			g    GovernanceState
			want string
		}{
			{"scope", limited, Change{Door: d, Channel: "stable"}, GovernanceState{}, row.scope},
			{"override by a non-admin", promoter, Change{Door: d, Channel: "stable", Override: true}, GovernanceState{}, row.override},
			{"freeze", promoter, Change{Door: d, Channel: "stable"}, GovernanceState{Freeze: freeze}, row.freeze},
			{"freeze, admin override", admin, Change{Door: d, Channel: "stable", Override: true}, GovernanceState{Freeze: freeze}, row.freezeOverride},
			{"closed window", promoter, Change{Door: d, Channel: "stable"}, GovernanceState{Windows: closed}, row.window},
			{"closed window, admin override", admin, Change{Door: d, Channel: "stable", Override: true}, GovernanceState{Windows: closed}, row.windowOverride},
			{"approvals", promoter, Change{Door: d, Channel: "stable"}, GovernanceState{Approvals: 2}, row.approvals},
			// The hole of old: freeze, override, approvals skipped.
			{"approvals under a freeze, admin override", admin, Change{Door: d, Channel: "stable", Override: true}, GovernanceState{Approvals: 2, Freeze: freeze}, row.approvalsOverride},
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s %s is %s", d, c.rule, c.want), func(t *testing.T) {
				v := Decide(c.c, c.p, c.g, now)
				if got := outcomeText(v); got != c.want {
					t.Fatalf("%s under %s: %s (%v), want %s", d, c.rule, got, v.Err, c.want)
				}
				if v.Outcome == Refuse && v.Err == nil {
					t.Fatal("a refusal without its error")
				}
			})
		}
	}
}

func TestRefusalsNameTheirRule(t *testing.T) {
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	promoter := Principal{Name: "ci", Scopes: []string{"promote"}}
	f := &Freeze{ID: 7, Channels: []string{"*"}, From: now.Add(-time.Hour), Until: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), Reason: "year end"}
	v := Decide(Change{Door: DoorPin, Channel: "stable"}, promoter, GovernanceState{Freeze: f}, now)
	if !errors.Is(v.Err, ErrFrozen) || !contains(v.Err.Error(), `until 2026-11-29T00:00:00Z ("year end", freeze 7)`) {
		t.Errorf("freeze refusal: %v", v.Err)
	}
	days, _ := ParseDays([]string{"mon"})
	loc, _ := time.LoadLocation("Europe/Berlin")
	ws := []Window{{Days: days, Start: 9 * 60, End: 17 * 60, Location: loc}}
	v = Decide(Change{Door: DoorRolloutAdvance, Channel: "stable"}, promoter, GovernanceState{Windows: ws}, now)
	if !errors.Is(v.Err, ErrWindowClosed) || !contains(v.Err.Error(), "next opens at 09:00") {
		t.Errorf("window refusal: %v", v.Err)
	}
	v = Decide(Change{Door: DoorPin, Channel: "stable"}, Principal{Name: "x", Channels: []string{"dev"}}, GovernanceState{}, now)
	if !errors.Is(v.Err, ErrScope) {
		t.Errorf("scope refusal: %v", v.Err)
	}
	// Deferred to the next window's start.
	v = Decide(Change{Door: DoorPin, Channel: "stable"}, promoter, GovernanceState{Windows: ws}, now)
	if v.Outcome != Defer || !v.Until.Equal(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)) {
		t.Errorf("a pin in a closed window: %s until %s, want defer until Monday 09:00 Berlin", v.Outcome, v.Until)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
