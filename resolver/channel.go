package resolver

import (
	"regexp"
	"time"

	"github.com/Masterminds/semver/v3"
)

// Channel is a channel as declared in configuration. It is built by the config
// loader and never changes while the process runs.
type Channel struct {
	Name       string
	Source     string
	Stream     Stream
	Constraint *semver.Constraints // nil: no constraint
	// ConstraintText is the constraint as written, for display.
	ConstraintText string
	Include        *regexp.Regexp // latestRegexp / include; nil: everything
	Exclude        *regexp.Regexp // excludeRegexp / exclude; nil: nothing
	Latest         string         // fixed version from config (channelserver "latest"); acts as a pin
	Builds         bool           // juju: serve versions with build numbers
	Redirect       string         // Location prefix; "" means the default (see server)
}

// ChannelState is the mutable part of a channel, kept in the database.
type ChannelState struct {
	Pin       string // canonical version pinned by a release engineer; "" when following the stream
	PinDigest string // digest captured at promotion time
	PinnedBy  string
	PinnedAt  time.Time
	Revision  int64 // bumps on every change; the ETag derives from it
	UpdatedAt time.Time
}
