// Package resolver is the vocabulary of Tidemark's domain: what a version is
// (juju and semver schemes, streams, pre-release labels), tags and their
// release gates, rollouts, governance (holds, windows, freezes, scheduled
// changes), events, and the fleet's counts. It does no I/O and imports none
// of the other packages: store, indexer and server import it.
//
// The domain is three packages, each importing only the ones before it:
// resolver (this one), resolver/catalog (channels, sources, constraints and
// risks: what a channel serves from which source) and resolver/snapshot (the
// immutable Snapshot, rebuilt per change and never per request, and every
// answer read from it).
//
// Besides the domain this package holds the two things every layer must
// agree on: the error taxonomy (ErrNotFound, ErrInvalid, ErrConflict,
// ErrUnprocessable, ErrUnauthorized, ErrForbidden, ErrUnavailable;
// errors.go), which the server maps to HTTP statuses in one table, and the
// records that cross from the store to its consumers (records.go: scan
// results, audit events, channel changes). Interfaces to the database
// belong to the packages that use them (indexer.Store, server.Store), not
// here.
package resolver
