// Package resolver is Tidemark's domain: what a version is (juju and semver
// schemes, streams, pre-release labels), what a channel serves (its stream,
// constraint, include and exclude patterns, pins and blocks), and the
// upgrade paths between versions, all answered from an immutable Snapshot
// that is rebuilt per change (Snapshot.Apply) and never per request.
//
// It does no I/O and imports none of the other packages: store, indexer and
// server import it. Besides the domain it holds the two things every layer
// must agree on: the error taxonomy (ErrNotFound, ErrInvalid, ErrConflict,
// ErrUnprocessable, ErrUnauthorized, ErrForbidden, ErrUnavailable;
// errors.go), which the server maps to HTTP statuses in one table, and the
// records that cross from the store to its consumers (records.go: scan
// results, audit events, channel changes). Interfaces to the database
// belong to the packages that use them (indexer.Store, server.Store), not
// here.
package resolver
