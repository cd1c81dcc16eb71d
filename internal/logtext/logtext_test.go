package logtext

import "testing"

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 16, "short"},
		{"exactly", 7, "exactly"},
		{"longer than that", 6, "longer…"},
		{"héllo", 2, "h…"}, // é is two bytes: half of it is dropped
	} {
		if got := Cut(tc.in, tc.n); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
