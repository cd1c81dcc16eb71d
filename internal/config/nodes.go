package config

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"time"

	goyaml "github.com/goccy/go-yaml"
	goyamlparser "github.com/goccy/go-yaml/parser"
	"gopkg.in/yaml.v3"

	"github.com/tidemark-dev/tidemark/resolver"
)

// parser walks the yaml.v3 node tree by hand rather than decoding into
// structs: that is what lets it report every problem at once, each with its
// line, instead of stopping at the first one the decoder meets.
type parser struct {
	file     string
	getenv   func(string) string
	problems []Problem
	warnings []string
	// broken holds sources with a name but other problems, so that channels
	// naming them do not add "unknown source" to the real problem.
	broken map[string]*Source
	names  []string // every named source, in order, for "known: ..." hints
}

func (p *parser) add(n *yaml.Node, item, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.problems = append(p.problems, Problem{Line: line, Item: item, Msg: fmt.Sprintf(format, args...)})
}

// sorted returns the problems in file order; problems from the environment
// (line 0) come first since they are about the whole file.
func (p *parser) sorted() []Problem {
	sort.SliceStable(p.problems, func(i, j int) bool { return p.problems[i].Line < p.problems[j].Line })
	return p.problems
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntax records a YAML syntax error. yaml.v3 names the line where the
// construct around the error began (an indentation error on line 7 is "line
// 5: did not find expected key"), so the document is read again by
// goccy/go-yaml's parser, which names the line and column of the offending
// token; yaml.v3's words are the fallback.
func (p *parser) syntax(err error, data []byte) {
	if _, perr := goyamlparser.ParseBytes(data, 0); perr != nil {
		var se *goyaml.SyntaxError
		if errors.As(perr, &se) && se.Token != nil && se.Token.Position != nil {
			p.problems = append(p.problems, Problem{Line: se.Token.Position.Line, Col: se.Token.Position.Column,
				Msg: "invalid YAML: " + se.Message})
			return
		}
	}
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, err := strconv.Atoi(m[1])
		if err != nil {
			line = 0 // more digits than an int: say it without a line
		}
		p.problems = append(p.problems, Problem{Line: line, Msg: "invalid YAML: " + m[2]})
		return
	}
	p.problems = append(p.problems, Problem{Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")})
}

// deref follows an alias. Only one step is needed: anchors sit on concrete
// nodes. The walk never recurses generically, so an alias cycle cannot loop.
func deref(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

// mapping reads a mapping whose keys must all be in known. Unknown and
// duplicate keys are problems; the result maps each known key present to its
// value node. A null node is an empty mapping.
func (p *parser) mapping(n *yaml.Node, item, key string, known []string) map[string]*yaml.Node {
	n = deref(n)
	out := map[string]*yaml.Node{}
	if isNull(n) {
		return out
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, item, "%swant a mapping, got %s", prefix(key), describe(n))
		return out
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.add(k, item, "%swant a plain key, got %s", prefix(key), describe(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			p.add(k, item, "%sduplicate key %q (first on line %d)", prefix(key), k.Value, first)
			continue
		}
		seen[k.Value] = k.Line
		if !contains(known, k.Value) {
			p.add(k, item, "%sunknown key %q%s", prefix(key), k.Value, suggest(k.Value, known))
			continue
		}
		out[k.Value] = v
	}
	return out
}

func prefix(key string) string {
	if key == "" {
		return ""
	}
	return key + ": "
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// suggest catches the usual slips: the two spellings in use here
// (snake_case, Tidemark's; camelCase, channelserver's), and typos (a
// letter missing, extra, wrong or two swapped: schema, aprovals).
func suggest(key string, known []string) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	for _, k := range known {
		if norm(k) == norm(key) {
			return fmt.Sprintf(" (did you mean %q?)", k)
		}
	}
	best, bestD := "", 3
	for _, k := range known {
		limit := 2
		if len(k) <= 5 {
			limit = 1
		}
		if d := editDistance(norm(key), norm(k)); d <= limit && d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// editDistance is the optimal string alignment distance of a and b
// (insertions, deletions, substitutions and adjacent swaps), for short
// configuration keys.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// list reads a sequence; a null node is an empty list.
func (p *parser) list(n *yaml.Node, item, key string) []*yaml.Node {
	n = deref(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, item, "%swant a list, got %s", prefix(key), describe(n))
		return nil
	}
	return n.Content
}

// str reads a scalar as written, so that `name: 2.9` is the string "2.9".
// ok is false when the key is absent, null or not a scalar (reported).
func (p *parser) str(n *yaml.Node, item, key string) (string, bool) {
	n = deref(n)
	if isNull(n) {
		return "", false
	}
	if n.Kind != yaml.ScalarNode {
		p.add(n, item, "%swant a string, got %s", prefix(key), describe(n))
		return "", false
	}
	return n.Value, true
}

func (p *parser) boolean(n *yaml.Node, item, key string) bool {
	n = deref(n)
	if isNull(n) {
		return false
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		p.add(n, item, "%swant true or false, got %s", prefix(key), describe(n))
	}
	return b
}

func (p *parser) integer(n *yaml.Node, item, key string) (int, bool) {
	n = deref(n)
	if isNull(n) {
		return 0, false
	}
	var i int
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&i) != nil {
		p.add(n, item, "%swant a whole number, got %s", prefix(key), describe(n))
		return 0, false
	}
	return i, true
}

func (p *parser) number(n *yaml.Node, item, key string) (float64, bool) {
	n = deref(n)
	if isNull(n) {
		return 0, false
	}
	var f float64
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&f) != nil {
		p.add(n, item, "%swant a number, got %s", prefix(key), describe(n))
		return 0, false
	}
	return f, true
}

func (p *parser) duration(n *yaml.Node, item, key string) (time.Duration, bool) {
	s, ok := p.str(n, item, key)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if days, cut := strings.CutSuffix(s, "d"); err != nil && cut {
		// Days, which Go's durations lack: retention is said in them.
		if n, aerr := strconv.Atoi(days); aerr == nil && n >= 0 && n <= 100000 {
			d, err = time.Duration(n)*24*time.Hour, nil
		}
	}
	if err != nil {
		p.add(n, item, "%swant a duration like 15m, 30s or 30d, got %q", prefix(key), s)
		return 0, false
	}
	return d, true
}

// regexp compiles a Go regexp, reporting the cause and fragment without Go's
// "error parsing regexp: " preamble.
func (p *parser) regexp(n *yaml.Node, item, key string) (*regexp.Regexp, bool) {
	s, ok := p.str(n, item, key)
	if !ok {
		return nil, false
	}
	re, err := regexp.Compile(s)
	if err != nil {
		p.add(deref(n), item, "%s%s", prefix(key), regexpCause(err))
		return nil, false
	}
	return re, true
}

func regexpCause(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("%s: `%s`", se.Code, se.Expr)
	}
	return strings.TrimPrefix(err.Error(), "error parsing regexp: ")
}

func (p *parser) stream(n *yaml.Node, item, key string) (resolver.Stream, bool) {
	s, ok := p.str(n, item, key)
	if !ok {
		return 0, false
	}
	st, err := resolver.ParseStream(s)
	if err != nil {
		p.add(deref(n), item, "%s%s", prefix(key), trimInvalid(err))
		return 0, false
	}
	return st, true
}

// trimInvalid drops the "invalid: " that resolver errors start with: every
// line of a config error is invalid, saying so again is noise.
func trimInvalid(err error) string {
	return strings.TrimPrefix(err.Error(), resolver.ErrInvalid.Error()+": ")
}
