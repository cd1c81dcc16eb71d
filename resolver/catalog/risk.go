package catalog

import (
	"fmt"
	"regexp"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
)

// Risk is a known risk of one source (CONTRACT section 13): upgrading a
// cluster from a version matching From to one matching To is risky, for
// the clusters whose ID matches one of Clusters (every cluster when there
// are none). No answer sends a cluster over a risky edge; the graph lists
// such edges as conditional.
type Risk struct {
	Source    string
	Name      string
	Message   string
	URL       string // "": the risk's own API URL is named instead
	From, To  string // Masterminds constraints
	Clusters  []string
	CreatedBy string
	CreatedAt time.Time

	from, to *Constraint
	clusters []*regexp.Regexp
}

// Limits of a risk's fields: a declaration is a short sentence, not a
// document, and a snapshot evaluates every risk of a source per answer.
const (
	MaxRisksPerSource   = 200
	maxRiskText         = 4096
	maxRiskClusters     = 100
	maxRiskClusterRegex = 256
)

var riskName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// FieldError is bad input in one named field of a request body: the
// server answers it as a 400 naming Field.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %v", e.Field, e.Err) }
func (e *FieldError) Unwrap() error { return resolver.ErrInvalid }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

// Compile checks every field of r and compiles its constraints and
// regexps; the error is a *FieldError naming the first bad field. A risk
// must be compiled before a snapshot evaluates it (SourceData.Risks are
// compiled by the snapshot; a stored risk that no longer compiles is
// skipped there).
func (r *Risk) Compile() error {
	switch {
	case !riskName.MatchString(r.Name):
		return fieldErr("name", "%q is not a risk name (letters, digits, '.', '_', '-'; at most 64, starting with a letter or digit)", r.Name)
	case r.Message == "":
		return fieldErr("message", "a risk needs a message saying what goes wrong")
	case len(r.Message) > maxRiskText:
		return fieldErr("message", "%d bytes, at most %d", len(r.Message), maxRiskText)
	case len(r.URL) > maxRiskText:
		return fieldErr("url", "%d bytes, at most %d", len(r.URL), maxRiskText)
	case len(r.Clusters) > maxRiskClusters:
		return fieldErr("clusters", "%d patterns, at most %d", len(r.Clusters), maxRiskClusters)
	}
	if r.URL != "" && !absoluteHTTP.MatchString(r.URL) {
		return fieldErr("url", "%q is not an http(s) URL", r.URL)
	}
	var err error
	for _, c := range []struct {
		field, text string
		dst         **Constraint
	}{{"from", r.From, &r.from}, {"to", r.To, &r.to}} {
		if c.text == "" {
			return fieldErr(c.field, "a constraint is required (\"*\" for any version)")
		}
		if len(c.text) > maxConstraintLen {
			return fieldErr(c.field, "%d bytes, at most %d", len(c.text), maxConstraintLen)
		}
		if *c.dst, err = compileConstraint(c.text); err != nil {
			return fieldErr(c.field, "constraint %q: %v", c.text, err)
		}
	}
	r.clusters = make([]*regexp.Regexp, len(r.Clusters))
	for i, p := range r.Clusters {
		field := fmt.Sprintf("clusters[%d]", i)
		if len(p) > maxRiskClusterRegex {
			return fieldErr(field, "%d bytes, at most %d", len(p), maxRiskClusterRegex)
		}
		if r.clusters[i], err = regexp.Compile(p); err != nil {
			return fieldErr(field, "%v", err)
		}
	}
	return nil
}

var absoluteHTTP = regexp.MustCompile(`^https?://[^\s/]+\S*$`)

// Covers reports whether the edge from -> to is one r declares risky.
func (r *Risk) Covers(from, to resolver.Version) bool {
	return r.CoversFrom(&from) && r.CoversTo(&to)
}

// CoversFrom reports whether v matches r's From: an edge leaving v may be
// risky. False before Compile.
func (r *Risk) CoversFrom(v *resolver.Version) bool { return r.from != nil && r.from.Check(v) }

// CoversTo reports whether v matches r's To. False before Compile.
func (r *Risk) CoversTo(v *resolver.Version) bool { return r.to != nil && r.to.Check(v) }

// For reports whether r applies to the cluster with this ID: a risk
// without cluster patterns applies to every cluster, one with patterns
// only to IDs one matches ("" matches none).
func (r *Risk) For(cluster string) bool {
	if len(r.clusters) == 0 {
		return true
	}
	if cluster == "" {
		return false
	}
	for _, re := range r.clusters {
		if re.MatchString(cluster) {
			return true
		}
	}
	return false
}

// CompileRisks keeps the risks of d that compile, for the index.
func CompileRisks(rs []Risk) []Risk {
	if len(rs) == 0 {
		return nil
	}
	out := make([]Risk, 0, len(rs))
	for _, r := range rs {
		if r.Compile() == nil {
			out = append(out, r)
		}
	}
	return out
}
