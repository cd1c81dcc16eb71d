package main

import (
	"context"
	"strings"
	"testing"

	"github.com/tidemark-dev/tidemark/store"
)

// TestHoldLiftThroughTheCLI: an admin lifts the hold a yank put on a
// version with `tidemark hold lift`; a promote token is refused naming the
// scope it needs; a second lift says it was not held.
func TestHoldLiftThroughTheCLI(t *testing.T) {
	c := startServe(t)
	st, err := store.Open(context.Background(), c.env["DATABASE_URL"], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if held, err := st.HoldVersion(context.Background(), "k3s", "v1.33.6+k3s2", "v1.33", "tidemark:evidence", "yanked on v1.33: told 10, adopted 2, stuck 8"); err != nil || !held {
		t.Fatalf("HoldVersion: %v %v", held, err)
	}
	admin := c.with("TIDEMARK_TOKEN", strings.TrimSpace(c.must("token", "create", "--name", "ops", "--scope", "admin")))
	promoter := c.with("TIDEMARK_TOKEN", strings.TrimSpace(c.must("token", "create", "--name", "bot", "--scope", "promote")))
	if code, _, errs := promoter.run("hold", "lift", "k3s", "v1.33.6-k3s2"); code == 0 || !strings.Contains(errs, "admin") {
		t.Errorf("a promoter lifting a hold: exit %d, %q; want refused, naming scope admin", code, errs)
	}
	if out := admin.must("hold", "lift", "k3s", "v1.33.6-k3s2", "--reason", "fixed in the image"); out != "k3s v1.33.6+k3s2: hold lifted: promotions may take it again\n" {
		t.Errorf("hold lift: %q", out)
	}
	checkDocExample(t, "../../docs/cli.md", "$ tidemark hold lift k3s v1.33.6-k3s2 --reason 'fixed in the image'", "k3s v1.33.6+k3s2: hold lifted: promotions may take it again\n")
	if code, _, errs := admin.run("hold", "lift", "k3s", "v1.33.6-k3s2"); code == 0 {
		t.Errorf("lifting a hold that is gone: exit 0, %q; want an error", errs)
	}
}
