// Package signed is the shape of Tidemark's signed answers (The Update
// Framework): each channel is one target file holding its answer and its
// served set, published in metadata that a stock TUF client verifies.
// This package is pure: the bytes of a channel's target, and the types
// the store keeps. Signing is internal/tufpub's; serving, server's.
package signed

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
)

// Roles, as TUF names them and the store keeps them.
const (
	Root      = "root"
	Targets   = "targets"
	Snapshot  = "snapshot"
	Timestamp = "timestamp"
)

// Version is one version of a channel's answer as a target lists it.
type Version struct {
	Version string `json:"version"`
	Tag     string `json:"tag"`
	Digest  string `json:"digest"`
}

// Answer is a channel's target file: what it answers a request that
// reports nothing, and its served set.
type Answer struct {
	Channel  string    `json:"channel"`
	Revision int64     `json:"revision"`
	Issued   time.Time `json:"issued"`
	Answer   *Version  `json:"answer"`
	Served   []Version `json:"served"`
}

// Content is what a change of a channel's answer or served set changes:
// two answers with the same content are one revision.
func (a Answer) Content() string {
	b, _ := json.Marshal(struct {
		A *Version  `json:"a"`
		S []Version `json:"s"`
	}{a.Answer, a.Served}) // strings only: cannot fail
	return string(b)
}

// Bytes are the target file's bytes.
func (a Answer) Bytes() []byte {
	b, _ := json.Marshal(a)
	return b
}

// Path is channel's target path.
func Path(channel string) string { return "channels/" + channel + ".json" }

// Hash is the hex sha256 of b, as consistent snapshots name files.
func Hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Channel is a channel's newest published target.
type Channel struct {
	Channel  string
	Revision int64
	Content  string
	Path     string
	Hash     string
	Length   int64
}

// Meta is one signed version of a role's metadata.
type Meta struct {
	Role    string
	Version int64
	Body    []byte
	Expires time.Time
}

// Target is a target file's bytes under its path and hash.
type Target struct {
	Path string
	Hash string
	Body []byte
}

// State is what is published: each channel's newest target, and the
// newest version of each role.
type State struct {
	Channels map[string]Channel
	Latest   map[string]Meta
	// Pending is a root that names a new online key and waits for serve
	// to run with it; nil: none.
	Pending *Meta
}

// Write is a publication: new target files, the channels they are now,
// and new metadata versions.
type Write struct {
	Targets  []Target
	Channels []Channel
	Meta     []Meta
	// Activate is a pending root's version this publication serves from
	// now on (its online key signed the rest); 0: none.
	Activate int64
}

// Publication says who signed a publication and from what: the digest of
// the publisher's sources and channels configuration, the store revision
// its answers were computed from, and the replica.
type Publication struct {
	ConfigDigest  string
	StoreRevision int64
	Replica       string
	// Timestamp is the timestamp version it published (0 before any).
	Timestamp int64
	At        time.Time
}

// A signer's publication refused in its transaction.
var (
	// ErrBehind: the publisher's snapshot includes an older store
	// revision than the last publication's; publishing would take answers
	// back. It waits for its snapshot to catch up.
	ErrBehind = fmt.Errorf("%w: this replica's snapshot is older than the last publication's", resolver.ErrState)
	// ErrLockLost: the signer lock is no longer held by the session it
	// was taken on.
	ErrLockLost = fmt.Errorf("%w: the signer lock is no longer held", resolver.ErrState)
)
