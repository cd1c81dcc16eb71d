package door

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
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
	Pin:             {"refuse:scope", "refuse:override", "refuse:freeze", "allow", "defer", "allow", "pending", "pending"},
	Unpin:           {"refuse:scope", "refuse:override", "refuse:freeze", "allow", "defer", "allow", "pending", "pending"},
	ConsolePin:      {"refuse:scope", "refuse:override", "refuse:freeze", "allow", "defer", "allow", "pending", "pending"},
	ConsoleUnpin:    {"refuse:scope", "refuse:override", "refuse:freeze", "allow", "defer", "allow", "pending", "pending"},
	Schedule:        {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "pending", "pending"},
	ConsoleSchedule: {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "pending", "pending"},
	RolloutAdvance:  {"refuse:scope", "refuse:override", "refuse:freeze", "allow", "refuse:window", "allow", "allow", "allow"},
	RolloutResume:   {"refuse:scope", "refuse:override", "refuse:freeze", "allow", "refuse:window", "allow", "allow", "allow"},
	ConsoleAdvance:  {"refuse:scope", "refuse:override", "refuse:freeze", "allow", "refuse:window", "allow", "allow", "allow"},
	ConsoleResume:   {"refuse:scope", "refuse:override", "refuse:freeze", "allow", "refuse:window", "allow", "allow", "allow"},
	ApplyScheduled:  {"refuse:scope", "refuse:override", "defer", "allow", "defer", "allow", "allow", "allow"},
	ApplyApproved:   {"refuse:scope", "refuse:override", "defer", "allow", "defer", "allow", "allow", "allow"},
	Promotion:       {"refuse:scope", "refuse:override", "defer", "allow", "defer", "allow", "pending", "pending"},
	RolloutPause:    {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "allow", "allow"},
	RolloutHalt:     {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "allow", "allow"},
	AlertHalt:       {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "allow", "allow"},
	GovernorPause:   {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "allow", "allow"},
	GovernorResume:  {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "allow", "allow"},
	Block:           {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "allow", "allow"},
	Unblock:         {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "allow", "allow"},
	Yank:            {"refuse:scope", "refuse:override", "allow", "allow", "allow", "allow", "allow", "allow"},
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
	freeze := &resolver.Freeze{ID: 7, Channels: []string{"stable"}, From: now.Add(-time.Hour), Until: now.Add(48 * time.Hour), Reason: "year end"}
	days, _ := resolver.ParseDays([]string{"mon", "tue", "wed", "thu", "fri"})
	closed := []resolver.Window{{Days: days, Start: 9 * 60, End: 17 * 60, Location: time.UTC}}
	promoter := resolver.Principal{Name: "ci", Scopes: []string{"promote"}}
	admin := resolver.Principal{Name: "root", Scopes: []string{"admin"}}
	limited := resolver.Principal{Name: "dev-bot", Scopes: []string{"promote"}, Channels: []string{"dev-*"}}
	for _, d := range Doors {
		row := doorTable[d]
		cases := []struct {
			rule string
			p    resolver.Principal
			c    Change
			g    Governance
			want string
		}{
			{"scope", limited, Change{Door: d, Channel: "stable"}, Governance{}, row.scope},
			{"override by a non-admin", promoter, Change{Door: d, Channel: "stable", Override: true}, Governance{}, row.override},
			{"freeze", promoter, Change{Door: d, Channel: "stable"}, Governance{Freeze: freeze}, row.freeze},
			{"freeze, admin override", admin, Change{Door: d, Channel: "stable", Override: true}, Governance{Freeze: freeze}, row.freezeOverride},
			{"closed window", promoter, Change{Door: d, Channel: "stable"}, Governance{Windows: closed}, row.window},
			{"closed window, admin override", admin, Change{Door: d, Channel: "stable", Override: true}, Governance{Windows: closed}, row.windowOverride},
			{"approvals", promoter, Change{Door: d, Channel: "stable"}, Governance{Approvals: 2}, row.approvals},
			// The hole of old: freeze, override, approvals skipped.
			{"approvals under a freeze, admin override", admin, Change{Door: d, Channel: "stable", Override: true}, Governance{Approvals: 2, Freeze: freeze}, row.approvalsOverride},
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
	promoter := resolver.Principal{Name: "ci", Scopes: []string{"promote"}}
	f := &resolver.Freeze{ID: 7, Channels: []string{"*"}, From: now.Add(-time.Hour), Until: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), Reason: "year end"}
	v := Decide(Change{Door: Pin, Channel: "stable"}, promoter, Governance{Freeze: f}, now)
	if !errors.Is(v.Err, resolver.ErrFrozen) || !contains(v.Err.Error(), `until 2026-11-29T00:00:00Z ("year end", freeze 7)`) {
		t.Errorf("freeze refusal: %v", v.Err)
	}
	days, _ := resolver.ParseDays([]string{"mon"})
	loc, _ := time.LoadLocation("Europe/Berlin")
	ws := []resolver.Window{{Days: days, Start: 9 * 60, End: 17 * 60, Location: loc}}
	v = Decide(Change{Door: RolloutAdvance, Channel: "stable"}, promoter, Governance{Windows: ws}, now)
	if !errors.Is(v.Err, resolver.ErrWindowClosed) || !contains(v.Err.Error(), "next opens at 09:00") {
		t.Errorf("window refusal: %v", v.Err)
	}
	v = Decide(Change{Door: Pin, Channel: "stable"}, resolver.Principal{Name: "x", Channels: []string{"dev"}}, Governance{}, now)
	if !errors.Is(v.Err, resolver.ErrScope) {
		t.Errorf("scope refusal: %v", v.Err)
	}
	// Deferred to the next window's start.
	v = Decide(Change{Door: Pin, Channel: "stable"}, promoter, Governance{Windows: ws}, now)
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
