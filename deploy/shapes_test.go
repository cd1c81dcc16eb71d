package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"
)

// shapes is testdata/kube-shapes.json, generated from the k8s.io/api Go
// types by deploy/internal/kubeshapes (make kube-shapes): every field name
// and JSON type of the kinds Tidemark deploys. Validating against it is as
// strict as decoding into those types, without this module depending on them.
type shapes struct {
	Kinds map[string]string            `json:"kinds"`
	Types map[string]map[string]string `json:"types"`
}

var loadShapes = sync.OnceValues(func() (*shapes, error) {
	data, err := os.ReadFile("testdata/kube-shapes.json")
	if err != nil {
		return nil, err
	}
	var s shapes
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("testdata/kube-shapes.json: %w", err)
	}
	return &s, nil
})

// object is one validated manifest document: its kind and its JSON form,
// ready to decode (loosely) into whatever local struct a test needs.
type object struct {
	file       string
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	raw json.RawMessage
}

// as decodes the object into v; the shape check already rejected unknown fields.
func (o object) as(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(o.raw, v); err != nil {
		t.Fatalf("%s %s: %v", o.Kind, o.Metadata.Name, err)
	}
}

// decodeAll splits a multi-document YAML stream and validates each
// document strictly against its kind's shape.
func decodeAll(data []byte) ([]object, error) {
	s, err := loadShapes()
	if err != nil {
		return nil, err
	}
	var out []object
	for _, doc := range splitYAML(data) {
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, err
		}
		if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
			continue // a document of comments only
		}
		var o object
		if err := json.Unmarshal(js, &o); err != nil {
			return nil, err
		}
		typ, ok := s.Kinds[o.APIVersion+" "+o.Kind]
		if !ok {
			return nil, errors.New("no shape for " + o.APIVersion + " " + o.Kind + ": add its type to deploy/internal/kubeshapes and run make kube-shapes")
		}
		var v any
		if err := json.Unmarshal(js, &v); err != nil {
			return nil, err
		}
		if err := s.check(v, typ, o.Kind); err != nil {
			return nil, err
		}
		o.raw = js
		out = append(out, o)
	}
	return out, nil
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	r := bufio.NewReader(bytes.NewReader(data))
	all, _ := io.ReadAll(r)
	for _, d := range docSep.Split(string(all), -1) {
		if strings.TrimSpace(d) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

var quantity = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+|[KMGTPE]i?|[mkMGTPE]|n|u)?$`)

// check reports the first place v does not fit typ, as a path from root.
func (s *shapes) check(v any, typ, path string) error {
	if v == nil {
		return nil // null is every field's zero value
	}
	bad := func() error { return fmt.Errorf("%s: %s is not %s", path, describe(v), typ) }
	switch {
	case typ == "any":
		return nil
	case typ == "string":
		if _, ok := v.(string); !ok {
			return bad()
		}
	case typ == "boolean":
		if _, ok := v.(bool); !ok {
			return bad()
		}
	case typ == "integer":
		if f, ok := v.(float64); !ok || f != math.Trunc(f) {
			return bad()
		}
	case typ == "number":
		if _, ok := v.(float64); !ok {
			return bad()
		}
	case typ == "int-or-string":
		switch x := v.(type) {
		case string:
		case float64:
			if x != math.Trunc(x) {
				return bad()
			}
		default:
			return bad()
		}
	case typ == "quantity":
		switch x := v.(type) {
		case float64:
		case string:
			if !quantity.MatchString(x) {
				return bad()
			}
		default:
			return bad()
		}
	case strings.HasPrefix(typ, "[]"):
		l, ok := v.([]any)
		if !ok {
			return bad()
		}
		for i, e := range l {
			if err := s.check(e, typ[2:], fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case strings.HasPrefix(typ, "map[string]"):
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		for _, k := range sortedKeys(m) {
			if err := s.check(m[k], typ[len("map[string]"):], path+"["+k+"]"); err != nil {
				return err
			}
		}
	default:
		fields, ok := s.Types[typ]
		if !ok {
			return fmt.Errorf("%s: kube-shapes.json has no type %s", path, typ)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		for _, k := range sortedKeys(m) {
			ft, ok := fields[k]
			if !ok {
				return fmt.Errorf("%s: unknown field %q", path, k)
			}
			if err := s.check(m[k], ft, path+"."+k); err != nil {
				return err
			}
		}
	}
	return nil
}

func describe(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T %v", v, v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
