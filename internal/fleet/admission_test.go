package fleet

import (
	"fmt"
	"testing"
	"time"
)

// TestAdmissionAddressTableAtItsLimit: the table counts maxAdmitAddrs
// addresses a minute: the last one fits, one more is refused (rate),
// known clusters still pass, and the next minute starts afresh. No scan:
// a full table costs a new address a map lookup.
func TestAdmissionAddressTableAtItsLimit(t *testing.T) {
	a := newAdmission(60, 1<<30)
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for i := range maxAdmitAddrs {
		if ok, why := a.admit("stable", fmt.Sprintf("c-%d", i), fmt.Sprintf("a-%d", i), t0); !ok {
			t.Fatalf("address %d of %d refused: %s", i+1, maxAdmitAddrs, why)
		}
	}
	start := time.Now()
	if ok, why := a.admit("stable", "c-new", "a-new", t0.Add(59*time.Second)); ok || why != dropRate {
		t.Errorf("address %d in the same minute: %v %q, want refused (rate)", maxAdmitAddrs+1, ok, why)
	}
	if took := time.Since(start); took > 10*time.Millisecond {
		t.Logf("a refusal at a full table took %s (should be a lookup)", took)
	}
	if ok, _ := a.admit("stable", "c-7", "a-new", t0.Add(59*time.Second)); !ok {
		t.Error("a known cluster was refused at a full table")
	}
	if ok, why := a.admit("stable", "c-new", "a-new", t0.Add(61*time.Second)); !ok {
		t.Errorf("the next minute: refused (%s)", why)
	}
	// Per address: the limit, then one more refused.
	for i := range 59 {
		if ok, why := a.admit("stable", fmt.Sprintf("x-%d", i), "a-new", t0.Add(62*time.Second)); !ok {
			t.Fatalf("cluster %d from one address refused: %s", i+2, why)
		}
	}
	if ok, why := a.admit("stable", "x-last", "a-new", t0.Add(62*time.Second)); ok || why != dropRate {
		t.Errorf("61st new cluster from one address in a minute: %v %q, want refused", ok, why)
	}
}

// TestAdmissionWindowIgnoresRequestsTakenOutOfOrder: concurrent requests
// take their time before the lock, so one may arrive a little earlier
// than the window's start; that must not open a new window (a flood from
// many connections got 22 of 20 through).
func TestAdmissionWindowIgnoresRequestsTakenOutOfOrder(t *testing.T) {
	a := newAdmission(20, 1<<30)
	t0 := time.Now()
	for i := range 20 {
		if ok, _ := a.admit("c", fmt.Sprintf("x-%d", i), "192.0.2.1", t0.Add(time.Millisecond)); !ok {
			t.Fatalf("cluster %d refused within the limit", i)
		}
	}
	if ok, reason := a.admit("c", "late", "192.0.2.1", t0); ok || reason != dropRate {
		t.Errorf("a 21st cluster stamped 1 ms before the window: admitted %v (%s), want refused as rate", ok, reason)
	}
	// A clock set back by more than a window does start a new one.
	if ok, _ := a.admit("c", "after-reset", "192.0.2.1", t0.Add(-2*time.Minute)); !ok {
		t.Errorf("after the clock went back two minutes the address is still refused")
	}
}
