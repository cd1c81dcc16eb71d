package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// Digest is the SHA-256 (64 lowercase hex digits) of the configuration of
// sources and channels after defaults are applied: what decides the
// answers a replica signs. Replicas that agree on it compute the same
// answers from the same store; credentials, timings of indexing and
// everything outside sources and channels are left out.
func (c *Config) Digest() string { return c.DigestWith(c.Channels) }

// DigestWith is Digest with channels in place of the file's: the running
// configuration after a SIGHUP applied new channels (sources take a
// restart).
func (c *Config) DigestWith(channels []catalog.Channel) string {
	type source struct {
		Name, Image, Scheme, Build string
		Labels                     resolver.Labels
		Exclude                    string
		Platforms                  []string
		SignatureKeyID             string
		GateSoak                   time.Duration
		ClusterAPI                 bool
	}
	type window struct {
		Days       [7]bool
		Start, End int
		Location   string
	}
	type channel struct {
		Name, Source, Stream, Constraint, Include, Exclude, Latest, Redirect string
		Builds, Stepwise                                                     bool
		Settle                                                               time.Duration
		Soak                                                                 *time.Duration
		Rollout                                                              *resolver.RolloutPolicy
		Approvals                                                            int
		ApprovalTTL                                                          time.Duration
		Windows                                                              []window
		Promote                                                              *catalog.PromotePolicy
		Yank                                                                 *catalog.YankPolicy
	}
	var all struct {
		Sources  []source
		Channels []channel
	}
	for _, s := range c.Sources {
		labels := s.Labels
		if labels == nil {
			labels = resolver.DefaultLabels
		}
		all.Sources = append(all.Sources, source{Name: s.Name, Image: s.Image, Scheme: string(s.Scheme), Build: s.Build, Labels: labels,
			Exclude: reString(s.Exclude), Platforms: s.Gates.Platforms, SignatureKeyID: s.Gates.SignatureKeyID, GateSoak: s.Gates.Soak,
			ClusterAPI: s.ClusterAPI})
	}
	for _, ch := range channels {
		out := channel{Name: ch.Name, Source: ch.Source, Stream: ch.Stream.String(), Constraint: ch.ConstraintText,
			Include: reString(ch.Include), Exclude: reString(ch.Exclude), Latest: ch.Latest, Redirect: ch.Redirect,
			Builds: ch.Builds, Stepwise: ch.Stepwise, Settle: ch.Settle, Soak: ch.Soak, Rollout: ch.Rollout,
			Approvals: ch.Approvals, ApprovalTTL: ch.ApprovalTTL, Promote: ch.Promote, Yank: ch.Yank}
		for _, w := range ch.Windows {
			loc := ""
			if w.Location != nil {
				loc = w.Location.String()
			}
			out.Windows = append(out.Windows, window{Days: w.Days, Start: w.Start, End: w.End, Location: loc})
		}
		all.Channels = append(all.Channels, out)
	}
	b, err := json.Marshal(all)
	if err != nil {
		panic("config digest: " + err.Error()) // plain values only: cannot fail
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func reString(re *regexp.Regexp) string {
	if re == nil {
		return ""
	}
	return re.String()
}
