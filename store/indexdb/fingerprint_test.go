package indexdb

import (
	"encoding/hex"
	"testing"

	"github.com/tidemark-dev/tidemark/resolver"
)

// Fingerprints are stored: the next listing of each source compares its
// own with the one its last listing left. One computed another way would
// make every source's next listing merge once after an upgrade, so the
// bytes hashed are pinned here, for tags of both schemes, a build number,
// a pre-release, an invalid tag, and names out of order.
func TestFingerprintIsStable(t *testing.T) {
	semver, err := resolver.NewParser(resolver.SchemeSemver, `k3s(\d+)`)
	if err != nil {
		t.Fatal(err)
	}
	juju, err := resolver.NewParser(resolver.SchemeJuju, "")
	if err != nil {
		t.Fatal(err)
	}
	var tags []resolver.Tag
	for _, n := range []string{"v1.33.6-k3s2", "v1.34.0-rc.1+k3s1", "latest", "v1.2.3"} {
		tags = append(tags, semver.Classify(n, nil))
	}
	for _, n := range []string{"3.6-beta1.2", "2.9.44.1", "juju"} {
		tags = append(tags, juju.Classify(n, nil))
	}
	tags = append(tags, resolver.InvalidTag(`"a\x00b"`, "holds a NUL byte"))
	got := hex.EncodeToString(fingerprint(scanTags(tags)))
	const want = "194c5c63ec0ecd6d427d2b45f2ee88ce55e7dd32f3ceaa54e5797b61bb847968"
	if got != want {
		t.Errorf("fingerprint = %s, want %s", got, want)
	}
}
