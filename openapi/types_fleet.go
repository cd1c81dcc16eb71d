package openapi

import "time"

// The fleet's wire types (docs/fleet.md), the replica's status and
// enrollments.

// FleetSummary is one channel's fleet (GET /api/v1/fleet).
type FleetSummary struct {
	Channel  string         `json:"channel"`
	Clusters int            `json:"clusters"`
	Active   int            `json:"active"`
	Versions []VersionCount `json:"versions"`
	Served   []VersionCount `json:"served"`
	// Lifecycle counts the clusters by their reported version's line:
	// supported (or no known line), deprecated, expired.
	Lifecycle FleetLifecycle `json:"lifecycle"`
}

// FleetLifecycle is how many of a channel's clusters run a version of a
// supported, deprecated or expired line.
type FleetLifecycle struct {
	Supported  int `json:"supported"`
	Deprecated int `json:"deprecated"`
	Expired    int `json:"expired"`
}

// VersionCount is how many clusters report, or were served, one version.
type VersionCount struct {
	Version  string `json:"version"`
	Clusters int    `json:"clusters"`
}

// FleetCluster is one cluster's record on one channel.
type FleetCluster struct {
	ID            string     `json:"id"`
	Channel       string     `json:"channel"`
	Reported      *string    `json:"reported"`
	ReportedSince *time.Time `json:"reported_since"`
	Served        *string    `json:"served"`
	Directed      *string    `json:"directed"`
	FirstSeen     time.Time  `json:"first_seen"`
	LastSeen      time.Time  `json:"last_seen"`
	Enrolled      bool       `json:"enrolled"`
	// Forced is "expired" when the last answer moved the cluster off an
	// expired line (lifecycle: {upgrade_expired: true}); absent otherwise.
	Forced string `json:"forced,omitempty"`
}

// Status is GET /api/v1/status: the build and how this replica's
// configuration stands to the signed answers'.
type Status struct {
	Version string        `json:"version"`
	Config  StatusConfig  `json:"config"`
	Signer  *StatusSigner `json:"signer"`
}

// StatusConfig is this replica's configuration digest and the last
// signed publication's (null before the first, or without tuf:).
type StatusConfig struct {
	Digest      string  `json:"digest"`
	Published   *string `json:"published"`
	InAgreement *bool   `json:"in_agreement"`
}

// StatusSigner is this replica's part in signing: whether it holds the
// signer lock, and the last publication's replica and store revision.
type StatusSigner struct {
	Holding       bool    `json:"holding"`
	PublishedBy   *string `json:"published_by"`
	StoreRevision *int64  `json:"store_revision"`
}

// EnrollmentRequest enrolls a cluster (POST /api/v1/fleet/enrollments).
type EnrollmentRequest struct {
	ID       string   `json:"id"`
	Channels []string `json:"channels,omitempty"`
}

// Enrollment is a new enrollment: its key, shown this once, and the
// channel URLs that carry it.
type Enrollment struct {
	ID   string   `json:"id"`
	Key  string   `json:"key"`
	URLs []string `json:"urls"`
}

// FleetClusterPage is a page of a channel's clusters (GET /api/v1/fleet/clusters).
type FleetClusterPage struct {
	Clusters []FleetCluster `json:"clusters"`
	Next     *string        `json:"next"`
}

// FleetClusterChannels is one cluster on every channel it asked (GET /api/v1/fleet/clusters/{id}).
type FleetClusterChannels struct {
	ID       string         `json:"id"`
	Channels []FleetCluster `json:"channels"`
}
