package resolver

import (
	"time"
)

// Sighting is one channel request from a cluster (CONTRACT section 5), as
// the server hands it to the fleet recorder.
type Sighting struct {
	Cluster  string
	Channel  string
	Reported string // canonical version the cluster reports; "" when it reports none
	Served   string // canonical version answered; "" when none (a 404)
	// Directed is Served when the channel's rule chose it (a directed
	// answer), "" when the answer was a stay: the cluster's own reported
	// version echoed back so that it is not moved down, held, or sent
	// somewhere unservable. Only directed answers widen a channel's served
	// set or count as evidence; a stay is a claim about the cluster alone.
	Directed string
	At       time.Time // when the request came
	// Since is when this replica first saw Reported in the batch being
	// written (At for a single sighting); the store keeps the earliest.
	Since time.Time
	// First is when this replica first saw the cluster in the batch (At
	// when zero): a new record's first_seen, so a cluster first seen just
	// before its channel's answer changed may vote on the new version
	// even when its next poll comes in the same batch.
	First time.Time
	// Outside: the client is outside fleet.evidence_networks, so the
	// record does not count as evidence.
	Outside bool
	// Enrolled: the request carried the cluster's enrollment key.
	Enrolled bool
	// Forced is "expired" when Served moved the cluster off an expired
	// line (snapshot.ForcedExpired); "" otherwise.
	Forced string
}

// ClusterRecord is what the fleet knows of one cluster on one channel.
type ClusterRecord struct {
	ID            string
	Channel       string
	Reported      string    // "" when it never reported a version
	ReportedSince time.Time // when any replica first saw Reported; zero when none
	Served        string    // "" when never answered with a version
	Directed      string    // the last directed answer; "" when only stays
	Forced        string    // "expired": the last answer moved it off an expired line
	FirstSeen     time.Time
	LastSeen      time.Time
	Enrolled      bool // its last request carried its enrollment key
}

// VersionCount is how many clusters have one version.
type VersionCount struct {
	Version  string
	Clusters int
}

// ChannelVersion names one version on one channel: what the fleet's
// served counts are kept by.
type ChannelVersion struct {
	Channel string
	Version string
}

// FleetSummary is one channel's fleet: every recorded cluster, how many
// were seen within the active window, and counts by reported and served
// version.
type FleetSummary struct {
	Channel  string
	Clusters int
	Active   int
	Versions []VersionCount
	Served   []VersionCount
}

// FleetCount is how many clusters one channel has: every recorded one, and
// those seen within the active window.
type FleetCount struct {
	Clusters int
	Active   int
}

// ClusterQuery selects a page of one channel's clusters, ordered by ID.
type ClusterQuery struct {
	Channel string // "": every channel (with Versions only), paged by cluster then channel
	Version string // "": any reported version
	// Versions, when non-nil, keeps the clusters reporting one of them (a
	// classification= filter: the versions of the lines so classified).
	Versions []string
	Stale    bool      // only clusters last seen before ActiveSince
	Since    time.Time // the start of the active window
	Limit    int
	After    string // the last ID of the previous page
}

// EvidenceRow is one group of the evidence counters kept as the fleet is
// written: active clusters of Channel told Served (first seen there by the
// time the channel first told anyone Served), reporting Reported, and
// whether they were told it at or before the stuck cutoff (Old).
type EvidenceRow struct {
	Channel, Served, Reported string
	Old                       bool
	Clusters                  int
}

// ToldMark is when Version became Channel's answer to a request that
// reports nothing.
type ToldMark struct {
	Channel, Version string
	At               time.Time
	// Answer: Version is the channel's answer to a request that reports
	// nothing (not a rollout's to).
	Answer bool
}

// EvidenceTold is when a channel first and last told a version.
type EvidenceTold struct {
	First, Last time.Time
}

// Evidence is what a channel's clusters say of one version it told them
// (CONTRACT section 18): the indexing leader computes it from the
// counters, every replica reads it.
type Evidence struct {
	Channel     string
	Version     string
	Told        int
	Adopted     int
	Stuck       int
	Halts       int
	FirstTold   time.Time
	LastTold    time.Time
	AdoptionP50 float64 // seconds; -1 with no adopted cluster
}

// EvidencePoint is one point of a version's adoption over time.
type EvidencePoint struct {
	At                   time.Time
	Told, Adopted, Stuck int
}
