package snapshot

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidemark-dev/tidemark/resolver"
)

// The rules of release engineering's writes, decided against a snapshot:
// the server binds a request, asks for a plan here, hands the plan to the
// store and encodes the answer. The store re-checks what another replica
// could have changed meanwhile (a block) inside its transaction, with the
// same rule and message (resolver.BlockedError).

// PlanPin decides a pin of channel to version (canonical or tag). The
// version must be indexed, not blocked and not held by its platform or
// signature gate, whatever force says: a pin to a version the registry does
// not have (whole) would hand clients a tag they cannot pull. Without force
// it must also be eligible for the channel and past its soak. Every
// refusal is ErrUnprocessable (the request is well-formed; the version it
// names is not one the channel can serve), except an unknown channel
// (ErrNotFound). The plan's From is what the channel serves now.
func (s *Snapshot) PlanPin(channel, version string, force bool) (resolver.ChannelChange, error) {
	a, err := s.Channel(channel)
	if err != nil {
		return resolver.ChannelChange{}, err
	}
	ch := a.Channel
	v, err := s.Version(ch.Source, version)
	if errors.Is(err, resolver.ErrNotFound) {
		return resolver.ChannelChange{}, fmt.Errorf("%w: pin %q: version %q is not indexed in source %q", resolver.ErrUnprocessable, ch.Name, version, ch.Source)
	}
	if err != nil {
		return resolver.ChannelChange{}, err
	}
	if v.Blocked {
		return resolver.ChannelChange{}, resolver.BlockedError(ch.Source, v.Version.String(), v.BlockReason())
	}
	if f := s.filters[s.byChannel[channel]]; !f.Servable(&v) && (!force || v.RegistryHeld) {
		if v.GatesUnchecked && v.RegistryHeld {
			return resolver.ChannelChange{}, fmt.Errorf("%w: pin %q: %s is held until its release gates are checked (%s not checked yet for digest %s; "+
				"the indexer checks them within seconds of a start, scan or push); retry shortly", ErrGatesPending, ch.Name, v.Version,
				strings.Join(resolver.RegistryGates(f.Gates(&v)), " and "), v.Digest)
		}
		return resolver.ChannelChange{}, resolver.GatedError(ch.Name, v.Version.String(), f.Gates(&v))
	}
	if !force {
		if _, err := s.Eligible(channel, version); err != nil {
			// Policy, which force is for: say so, or a build-numbered
			// hotfix looks impossible to promote.
			return resolver.ChannelChange{}, fmt.Errorf(`pin %q to %s: %w; to pin it anyway, send "force": true (tidemark promote --force)`, ch.Name, v.Version, err)
		}
	}
	return resolver.ChannelChange{Channel: ch.Name, Source: ch.Source, Version: v.Version.String(), Digest: v.Digest.String(),
		IfRevision: resolver.AnyRevision, From: Served(a), Rollout: ch.Rollout}, nil
}

// PlanUnpin decides an unpin of channel: the channel goes back to its
// configured Latest, else its stream. From and To are what it serves now
// and will serve, for the audit trail.
func (s *Snapshot) PlanUnpin(channel string) (resolver.ChannelChange, error) {
	a, err := s.Channel(channel)
	if err != nil {
		return resolver.ChannelChange{}, err
	}
	after, err := s.Unpinned(channel)
	if err != nil {
		return resolver.ChannelChange{}, err
	}
	return resolver.ChannelChange{Channel: a.Channel.Name, Source: a.Channel.Source, IfRevision: resolver.AnyRevision, From: Served(a), To: Served(after), Rollout: a.Channel.Rollout}, nil
}

// ExplainUnpin turns the store's "no pin" (ErrNotFound) for channel into
// what a person needs to hear when the channel is fixed by configuration:
// unpin removes only a database pin. Other errors pass through.
func (s *Snapshot) ExplainUnpin(channel string, err error) error {
	a, cerr := s.Channel(channel)
	if errors.Is(err, resolver.ErrNotFound) && cerr == nil && a.Channel.Latest != "" {
		return fmt.Errorf("%w: channel %q has no pin to remove: it is fixed to %s by its configuration (latest:); change the configuration, or pin over it", resolver.ErrNotFound, channel, a.Channel.Latest)
	}
	return err
}

// Served is the canonical version a channel answer serves, "" for none.
func Served(a ChannelAnswer) string {
	if a.Tag == nil {
		return ""
	}
	return a.Tag.Version.String()
}

// ErrGatesPending wraps ErrUnprocessable for a pin of a version whose
// registry gates have not been checked yet: the server may check them
// then and plan again.
var ErrGatesPending = fmt.Errorf("%w: release gates pending", resolver.ErrUnprocessable)
