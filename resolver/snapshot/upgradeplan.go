package snapshot

import (
	"fmt"

	"github.com/tidemark-dev/tidemark/resolver"
)

// UpgradePlan is the chained upgrade a cluster takes from one version of
// source to another (Cluster API's GenerateUpgradePlan, CONTRACT section
// 13): the newest servable released version of each minor after from's
// that has one, up to to's minor (excluded), then to itself; ascending,
// one version per minor. from and to may be versions or tags; from need
// not be indexed (a cluster may run a version since deleted).
// ErrNotFound for an unknown source; ErrInvalid for a version that does
// not parse; ErrUnprocessable (the error says why) when to is not a
// servable indexed version, is older than from, or is another major.
func (s *Snapshot) UpgradePlan(source, from, to string) ([]resolver.Tag, error) {
	idx, err := s.source(source)
	if err != nil {
		return nil, err
	}
	fv, err := idx.current(from)
	if err != nil {
		return nil, err
	}
	target, ok := idx.lookup(to)
	if !ok {
		if _, err := idx.current(to); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: target %s is not a version of %s Tidemark has indexed", resolver.ErrUnprocessable, to, source)
	}
	tv := target.Version
	switch {
	case target.Blocked:
		return nil, fmt.Errorf("%w: target %s is blocked%s", resolver.ErrUnprocessable, tv, suffix(": ", target.BlockReason()))
	case !target.Servable && target.Gates != nil:
		return nil, fmt.Errorf("%w: target %s is held by release gates (%s)", resolver.ErrUnprocessable, tv, target.Gates.Reason())
	case !target.Servable:
		return nil, fmt.Errorf("%w: target %s is not servable", resolver.ErrUnprocessable, tv)
	case resolver.Compare(tv, fv) < 0:
		return nil, fmt.Errorf("%w: target %s is a downgrade from %s", resolver.ErrUnprocessable, tv, fv)
	case tv.Major != fv.Major:
		return nil, fmt.Errorf("%w: target %s is another major than %s: Kubernetes upgrades one minor at a time", resolver.ErrUnprocessable, tv, fv)
	case resolver.Compare(tv, fv) == 0:
		return []resolver.Tag{}, nil
	}
	var plan []resolver.Tag
	var newest *resolver.VersionView // of the minor being walked
	flush := func() {
		if newest != nil {
			plan = append(plan, newest.Tag)
			newest = nil
		}
	}
	for i := range idx.versions {
		v := &idx.versions[i]
		vv := v.Version
		if vv.Major != fv.Major || vv.Minor <= fv.Minor {
			continue
		}
		if vv.Minor >= tv.Minor {
			break
		}
		if newest != nil && newest.Version.Minor != vv.Minor {
			flush()
		}
		if v.Valid && !v.Blocked && v.Servable && v.Stream == resolver.Released {
			newest = v
		}
	}
	flush()
	return append(plan, target.Tag), nil
}
