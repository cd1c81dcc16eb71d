// Package snapshot holds the immutable Snapshot every surface answers from
// and every answer read from it: a channel's version, the one a cluster gets
// (rollout destination, stepwise step, settle hold, never down, known
// risks), dry-run upgrades, the update graph, Cluster API upgrade plans,
// registry tags, and the delta between two snapshots. A Snapshot is built
// once per change (New, Apply) and never per request.
//
// Pure, no I/O. It imports resolver and resolver/catalog.
package snapshot
