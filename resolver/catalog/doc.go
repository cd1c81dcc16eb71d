// Package catalog is what a channel serves from which source: a Source
// (image, version scheme, labels, gates) and its indexed SourceData, a
// Channel (stream, constraint, include and exclude patterns) and its
// ChannelState (pin, hold, rollout), known risks, and the Filter that
// decides whether a version is eligible for a channel. Constraints are
// compiled here so that checking one allocates nothing.
//
// Pure, no I/O. It imports resolver; resolver/snapshot imports it.
package catalog
