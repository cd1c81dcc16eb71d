package resolver

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestCompareKeysAgreeWithCompare: wherever two versions' keys differ,
// CompareKeys orders them as Compare does, over semver (prefixes,
// pre-releases, build numbers and metadata, numbers past int32) and juju
// (labels, patches, builds) versions, and versions of both schemes.
func TestCompareKeysAgreeWithCompare(t *testing.T) {
	semver := MustParser(SchemeSemver, `k3s(\d+)`)
	r := rand.New(rand.NewPCG(31, 7))
	var vs []Version
	add := func(p *Parser, tag string) {
		if v, err := p.Parse(tag); err == nil {
			vs = append(vs, v)
		}
	}
	nums := []int{0, 1, 2, 9, 10, 11, 99, 100, 2147483648, 999999999999999999}
	num := func() int { return nums[r.IntN(len(nums))] }
	for range 400 {
		core := fmt.Sprintf("%d.%d.%d", num(), num(), num())
		pre := []string{"", "-rc1", "-rc.2", "-alpha", "-alpha.1", "-1", "-beta.11"}[r.IntN(7)]
		build := []string{"", "+k3s1", "-k3s2", "+meta.7", "+k3s10"}[r.IntN(5)]
		add(semver, []string{"", "v"}[r.IntN(2)]+core+pre+build)
		juju := fmt.Sprintf("%d.%d", num()%100, num()%100)
		switch r.IntN(4) {
		case 0:
			juju += fmt.Sprintf(".%d", num()%100)
		case 1:
			juju += fmt.Sprintf("-beta%d", num()%20)
		case 2:
			juju += fmt.Sprintf(".%d.%d", num()%100, num()%100)
		case 3:
			juju += fmt.Sprintf("-rc%d.%d", num()%20, num()%10)
		}
		add(jujuParser, juju)
	}
	var semverN, jujuN, decided int
	for _, v := range vs {
		if v.Scheme() == SchemeJuju {
			jujuN++
		} else {
			semverN++
		}
	}
	if semverN < 300 || jujuN < 300 {
		t.Fatalf("%d semver and %d juju versions parsed; the test needs both", semverN, jujuN)
	}
	for i := range vs {
		for j := range vs {
			a, b := &vs[i], &vs[j]
			k := CompareKeys(a.OrderKey(), b.OrderKey())
			if k == 0 {
				continue
			}
			decided++
			if c := Compare(*a, *b); c != k {
				t.Fatalf("CompareKeys(%s, %s) = %d, Compare = %d", a, b, k, c)
			}
		}
	}
	t.Logf("%d versions, %d ordered pairs decided by their keys", len(vs), decided)
}
