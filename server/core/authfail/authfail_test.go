package authfail

import (
	"fmt"
	"testing"
	"time"
)

// TestALockedAddressStaysLockedWhateverOthersDo: failures from more
// addresses than the table holds never unlock a locked one (issue 24 item
// 11: the table was cleared at 4,096).
func TestALockedAddressStaysLockedWhateverOthersDo(t *testing.T) {
	a := New(Limit, time.Hour)
	for range Limit + 1 {
		a.Failed("203.0.113.1")
	}
	for i := range MaxClients + 200 {
		a.Failed(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255))
	}
	if _, locked := a.Failed("203.0.113.1"); !locked {
		t.Error("a locked address was unlocked by other addresses' failures")
	}
	if len(a.m) > MaxClients {
		t.Errorf("table of %d entries, want at most %d", len(a.m), MaxClients)
	}
}
