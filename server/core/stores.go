package core

import (
	"context"
	"github.com/tidemark-dev/tidemark/resolver/signed"
	"time"

	"github.com/tidemark-dev/tidemark/internal/governor"
	"github.com/tidemark-dev/tidemark/internal/rollouts"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/server/webhooks"
)

// Store is what the write routes need of the database (*store.Store). Each
// write runs in one store transaction that also appends its audit event, so
// a change never lands without its record or the other way round.
type Store interface {
	// Authenticate answers ErrUnauthorized for unknown and revoked tokens
	// alike, so that the two look the same from outside.
	Authenticate(ctx context.Context, token string) (resolver.Principal, error)
	// Pin and Unpin check c.IfRevision (resolver.AnyRevision: no check) against
	// the channel's revision inside the transaction: ErrConflict when it moved.
	Pin(ctx context.Context, c resolver.ChannelChange) (catalog.ChannelState, error)
	Unpin(ctx context.Context, c resolver.ChannelChange) (catalog.ChannelState, error)
	Block(ctx context.Context, source, version, actor, reason string) (catalog.Block, error)
	Unblock(ctx context.Context, source, version, actor, reason string) error
	// PutRisk and DeleteRisk declare and remove a known risk of a source.
	PutRisk(ctx context.Context, r catalog.Risk, actor string) (catalog.Risk, error)
	DeleteRisk(ctx context.Context, source, name, actor, reason string) error
	// ChannelHistory is a channel's audit events and its source's blocks
	// and unblocks, newest first.
	ChannelHistory(ctx context.Context, channel, source string) ([]resolver.AuditEvent, error)
}

// ScanFunc starts indexing source in the background and reports whether a
// scan was already running (which then stands for the one asked). It must
// not tie the scan to ctx beyond starting it: the request ends at once.
type ScanFunc func(ctx context.Context, source string) (alreadyRunning bool, err error)

// GateFunc checks the release gates of one tag of source now
// (indexer.GateTag), for a pin of a version whose gates are still pending.
type GateFunc func(ctx context.Context, source, tag string) error

// Governance is what the governance routes and the governor need of the
// database (*store.Store): CONTRACT section 15.
type Governance interface {
	governor.Store
	ScheduleChange(ctx context.Context, c resolver.ScheduledChange) (resolver.ScheduledChange, error)
	Changes(ctx context.Context, state string, limit int) ([]resolver.ScheduledChange, error)
	Change(ctx context.Context, id int64) (resolver.ScheduledChange, error)
	CancelChange(ctx context.Context, id int64, actor, reason string) (resolver.ScheduledChange, error)
	DecideChange(ctx context.Context, id int64, who resolver.Principal, approve bool, reason string) (resolver.ScheduledChange, error)
	CreateFreeze(ctx context.Context, f resolver.Freeze) (resolver.Freeze, error)
	CancelFreeze(ctx context.Context, id int64, actor string) (resolver.Freeze, error)
}

// RolloutStore keeps staged rollouts (*store.Store).
type RolloutStore interface {
	rollouts.Store
	// RolloutControl applies a pause, resume, advance or halt: ErrNotFound
	// when the channel never rolled out, ErrState when its state refuses.
	RolloutControl(ctx context.Context, channel, kind, actor, reason string) (resolver.Rollout, error)
	// RolloutRollback halts as a rollback: clusters already on the
	// rollout's version go back to its from too.
	RolloutRollback(ctx context.Context, channel, actor, reason string) (resolver.Rollout, error)
	// RolloutClusters counts the fleet's clusters last served to and from.
	RolloutClusters(ctx context.Context, channel, from, to string) (onTo, onFrom int, err error)
}

// RolloutOptions configures staged rollouts (CONTRACT section 7). The
// loops that record and count them are internal/rollouts'.
type RolloutOptions struct {
	// Store keeps them; nil: the rollout routes answer 503 (rollouts
	// already recorded are still served).
	Store RolloutStore
	// Counts are the rollouts' cluster counts the channel object shows,
	// filled by the rollout loops. nil: none are shown.
	Counts *rollouts.Counts
}

// PushFunc queues ev's tag for indexing on every source whose image is its
// repository and returns how many there are (0: the repository is not
// indexed here); err wraps ErrRateLimited when a source's queue is full.
// It must not tie the work to ctx beyond queueing it.
type PushFunc func(ctx context.Context, ev webhooks.PushEvent, received time.Time) (sources int, err error)

// NotificationsFunc lists the newest limit outbound events and each
// endpoint's delivery state (notify.Deliverer.Status).
type NotificationsFunc func(ctx context.Context, limit int) (openapi.Notifications, error)

// Enroller enrolls clusters and revokes their keys (*store.Store).
type Enroller interface {
	Enroll(ctx context.Context, id string, channels []string) (string, error)
	RevokeEnrollment(ctx context.Context, id string) error
}

// SigningStatus is the signing loop's view (*tufpub.Loop): this
// replica's configuration digest, the last publication (nil before the
// first), and whether this replica holds the signer lock.
type SigningStatus interface {
	Status() (digest string, published *signed.Publication, holding bool)
}
