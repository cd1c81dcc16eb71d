package indexer

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// The spec's grammar as a regexp, the oracle isOCITag must agree with.
var ociTagGrammar = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

func TestIsOCITagAgreesWithTheGrammar(t *testing.T) {
	cases := []string{
		"", "a", "_", ".", "-", "v1.33.6-k3s1", "latest", "1.0.0+meta", "a b", "é",
		"_x", ".x", "-x", "x.", "x-", "x_", "A.Z-0_9",
		strings.Repeat("a", 127), strings.Repeat("a", 128), strings.Repeat("a", 129),
		"a\x00", "\xff", "v1/2",
	}
	alphabet := []byte("aZ09_.-+/ \x00\xff")
	r := rand.New(rand.NewPCG(1, 2))
	for range 20_000 {
		b := make([]byte, r.IntN(6))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		if got, want := isOCITag(c), ociTagGrammar.MatchString(c); got != want {
			t.Errorf("isOCITag(%q) = %v, the grammar says %v", c, got, want)
		}
	}
}
