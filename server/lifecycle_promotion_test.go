package server

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
)

// TestAPromotionNeverTakesAnExpiredVersion: with every condition met, a
// promotion to a version whose line has expired is refused by the one
// decision, the channel's promotion status says why, and the channel
// stays where it was.
func TestAPromotionNeverTakesAnExpiredVersion(t *testing.T) {
	pf := newPromotionFleet(t, 0)
	pf.srv.Snapshots().SetLifecycle(map[string]lifecycle.Policy{"k3s": {End: map[string]time.Time{"1.33": time.Now().Add(-time.Hour)}}})
	if err := pf.srv.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	pf.adopted(4)
	st := pf.round()
	if !strings.Contains(st.Why, "v1.33.6+k3s2 is expired: its line 1.33 ended") || strings.Contains(st.Why, "allow_expired") {
		t.Errorf("promotion status %+v, want it to say the target expired", st)
	}
	if ch, _ := channel(t, &httptest.Server{URL: pf.base}, "stable-33"); str(ch.Version) != "v1.33.5+k3s1" {
		t.Errorf("stable-33 moved to %s", str(ch.Version))
	}
}
