package resolver

import (
	"errors"
	"time"
)

// Snapshot is an immutable, fully indexed view of every source, channel, pin
// and block. The server swaps a new one in atomically after every change and
// answers every read from it; nothing here touches I/O.
type Snapshot struct {
	LoadedAt time.Time
	// TODO(resolver): per-source sorted versions, canonical/tag lookup maps,
	// per-channel resolved answers computed once at construction.
}

// NewSnapshot indexes data. channels are the configured channels; states maps
// channel name to its database state (missing: never pinned).
func NewSnapshot(channels []Channel, data []SourceData, states map[string]ChannelState, loadedAt time.Time) *Snapshot {
	return &Snapshot{LoadedAt: loadedAt}
}

// ChannelAnswer is a channel with its current answer.
type ChannelAnswer struct {
	Channel Channel
	State   ChannelState
	Pinned  bool // a pin (database) or a fixed Latest (config) decides the answer
	Tag     *Tag // the version served; nil when nothing is eligible
}

// Channel answers one channel. ErrNotFound when the channel is unknown; an
// answer with a nil Tag when nothing is eligible.
func (s *Snapshot) Channel(name string) (ChannelAnswer, error) {
	return ChannelAnswer{}, errors.New("TODO(resolver)")
}

// Channels answers every channel, in configuration order.
func (s *Snapshot) Channels() []ChannelAnswer { return nil }

// SourceView is one source with its indexing status and counts.
type SourceView struct {
	Source   Source
	LastScan *Scan
	LastOK   *Scan
	Tags     int            // present tags, parsed or not
	Unparsed int            // present tags that are not versions
	Streams  map[Stream]int // versions per stream
}

// Sources lists sources in configuration order.
func (s *Snapshot) Sources() []SourceView { return nil }

// SourceInfo is one source; ErrNotFound when unknown.
func (s *Snapshot) SourceInfo(name string) (SourceView, error) {
	return SourceView{}, errors.New("TODO(resolver)")
}

// VersionView is a tag with whether it is blocked.
type VersionView struct {
	Tag
	Blocked bool
}

// Versions lists a source's valid versions ascending, filtered by stream
// (nested) and a Masterminds constraint ("" for none). ErrNotFound for an
// unknown source; ErrInvalid for a bad constraint.
func (s *Snapshot) Versions(source string, stream Stream, constraint string) ([]VersionView, error) {
	return nil, errors.New("TODO(resolver)")
}

// Version finds one version by canonical string or by raw tag.
func (s *Snapshot) Version(source, versionOrTag string) (VersionView, error) {
	return VersionView{}, errors.New("TODO(resolver)")
}
