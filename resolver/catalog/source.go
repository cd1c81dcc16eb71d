package catalog

import (
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
)

// Source is a source's configuration as the resolver needs it (the registry
// side of a source lives in the indexer).
type Source struct {
	Name   string
	Image  string
	Parser *resolver.Parser
	Labels resolver.Labels // nil: DefaultLabels
	Gates  resolver.Gates  // release gates; the zero value has none
	// Lifecycle is when the source's lines end (lifecycle:); the zero
	// value: never.
	Lifecycle lifecycle.Policy
}

// Classify parses a tag under the source's scheme and label map
// (Parser.Classify).
func (s *Source) Classify(name string) resolver.Tag { return s.Parser.Classify(name, s.Labels) }

// Scan is the record of one indexing run of one source.
type Scan struct {
	ID       int64
	Source   string
	Started  time.Time
	Finished time.Time // zero while running
	Outcome  string    // "running", "ok", "failed"
	Error    string
	Complete bool // the listing was complete (absent tags were marked gone)
	TagsSeen int
	TagsNew  int
	TagsGone int
	Requests int // registry requests made
}

// Block is a version that no channel serves and no resolve answer offers.
type Block struct {
	Source    string
	Version   string // canonical
	Reason    string
	BlockedBy string
	BlockedAt time.Time
}

// SourceData is everything indexed for one source: what the store loads and
// the snapshot indexes.
type SourceData struct {
	Source   Source
	Tags     []resolver.Tag // present tags, any order; unparsed ones included
	Blocks   []Block
	LastScan *Scan  // nil: never scanned
	LastOK   *Scan  // newest successful scan; nil: none yet
	Risks    []Risk // known risks, by name (compiled by the snapshot)
}
