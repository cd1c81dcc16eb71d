package testutil

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// update is every test binary's -update flag: `go test ./pkg -update`
// rewrites the golden files its tests compare with.
var update = flag.Bool("update", false, "rewrite the golden files from the current outputs")

// Golden compares got with the golden file at path; with -update it
// rewrites the file instead. The one golden helper of the repository.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-golden +got; -update rewrites it):\n%s", path, diff)
	}
}
