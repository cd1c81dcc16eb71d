package catalog

import (
	"errors"
	"testing"

	"github.com/tidemark-dev/tidemark/resolver"
)

// TestRiskCompileNamesTheField: each bad field is named.
func TestRiskCompileNamesTheField(t *testing.T) {
	long := make([]byte, maxRiskText+1)
	for i := range long {
		long[i] = 'a'
	}
	ok := Risk{Name: "R", Message: "m", From: "*", To: "*"}
	for _, tc := range []struct {
		field string
		edit  func(r *Risk)
	}{
		{"name", func(r *Risk) { r.Name = "no spaces" }},
		{"name", func(r *Risk) { r.Name = "" }},
		{"message", func(r *Risk) { r.Message = "" }},
		{"message", func(r *Risk) { r.Message = string(long) }},
		{"url", func(r *Risk) { r.URL = "ftp://x" }},
		{"from", func(r *Risk) { r.From = ">>1" }},
		{"from", func(r *Risk) { r.From = "" }},
		{"to", func(r *Risk) { r.To = "not a constraint" }},
		{"clusters[1]", func(r *Risk) { r.Clusters = []string{"ok", "(unclosed"} }},
	} {
		r := ok
		tc.edit(&r)
		var fe *FieldError
		if err := r.Compile(); !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, resolver.ErrInvalid) {
			t.Errorf("%+v: %v, want a FieldError naming %s", r, err, tc.field)
		}
	}
	r := ok
	r.Clusters = make([]string, maxRiskClusters)
	for i := range r.Clusters {
		r.Clusters[i] = "x"
	}
	if err := r.Compile(); err != nil {
		t.Errorf("%d cluster patterns (the limit): %v", maxRiskClusters, err)
	}
	r.Clusters = append(r.Clusters, "x")
	if err := r.Compile(); err == nil {
		t.Errorf("%d cluster patterns: accepted", maxRiskClusters+1)
	}
}
