package resolver

import "errors"

// Query is a dry-run upgrade question: "I run Current of Source; on Stream (or
// following Channel), what may I upgrade to, and by what path?"
type Query struct {
	Source  string
	Current string  // a version or tag of Source
	Stream  *Stream // nil: the channel's stream, or Released
	Channel string  // "": none; else the channel's stream, constraint and filters apply
	Target  string  // "": pick; else that exact version is asked for
	Builds  bool    // allow juju build-numbered versions even if Current has none
}

// Answer is the dry-run answer. Available is ascending; Path is one newest
// version per minor from Current up to the newest candidate; Target is the
// next step (nil when nothing newer).
type Answer struct {
	Source    string
	Current   Version
	Stream    Stream
	Channel   string
	Available []Tag
	Target    *Tag
	Path      []Tag
	Reason    string
}

// Resolve answers q over the snapshot. Errors: ErrNotFound (unknown source,
// channel, or current/target version), ErrInvalid (unparseable input),
// ErrUnprocessable (a target that is a downgrade, a skip of a minor, another
// major, blocked or ineligible; the error text is the reason).
func (s *Snapshot) Resolve(q Query) (Answer, error) {
	return Answer{}, errors.New("TODO(resolver)")
}
