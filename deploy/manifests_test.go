package deploy

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// kustomization covers the kustomize fields the base uses, strictly too.
type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Labels     []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors,omitempty"`
	} `json:"labels"`
	Resources          []string `json:"resources"`
	ConfigMapGenerator []struct {
		Name  string   `json:"name"`
		Files []string `json:"files"`
	} `json:"configMapGenerator"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	} `json:"images"`
}

// decodeFile validates every YAML document of a manifest file strictly.
func decodeFile(t *testing.T, path string) []object {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeAll(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for i := range objs {
		objs[i].file = path
	}
	return objs
}

func readKustomization(t *testing.T) kustomization {
	t.Helper()
	data, err := os.ReadFile("kubernetes/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	return k
}

func TestEveryManifestDecodesStrictly(t *testing.T) {
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "examples/suc-plan.yaml")
	k := readKustomization(t)
	for _, f := range files {
		base := filepath.Base(f)
		if base == "kustomization.yaml" || isGeneratorFile(k, base) {
			continue
		}
		t.Run(f, func(t *testing.T) {
			if objs := decodeFile(t, f); len(objs) == 0 {
				t.Errorf("%s has no manifest", f)
			}
		})
	}
}

func isGeneratorFile(k kustomization, name string) bool {
	for _, g := range k.ConfigMapGenerator {
		for _, f := range g.Files {
			if f == name {
				return true
			}
		}
	}
	return false
}

// The decoding above must be able to fail: a misspelt field, a field at the
// wrong level, a wrong type and an unknown kind are each rejected.
func TestStrictDecodingCatchesTypos(t *testing.T) {
	good, err := os.ReadFile("kubernetes/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := os.ReadFile("kubernetes/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, data string }{
		{"misspelt probe", strings.Replace(string(good), "readinessProbe:", "readinesProbe:", 1)},
		{"field at the wrong level", strings.Replace(string(good), "  replicas: 2", "  replicas: 2\n  runAsNonRoot: true", 1)},
		{"wrong type", strings.Replace(string(good), "replicas: 2", "replicas: two", 1)},
		{"misspelt CNPG field", strings.Replace(string(cluster), "instances: 3", "instance: 3", 1)},
		{"unknown kind", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.data == string(good) || tt.data == string(cluster) {
				t.Fatal("the mutation did not apply; the test is stale")
			}
			if _, err := decodeAll([]byte(tt.data)); err == nil {
				t.Error("decoded without an error")
			}
		})
	}
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	k := readKustomization(t)
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" && !isGeneratorFile(k, b) {
			onDisk = append(onDisk, b)
		}
	}
	listed := append([]string(nil), k.Resources...)
	sort.Strings(onDisk)
	sort.Strings(listed)
	if diff := cmp.Diff(onDisk, listed); diff != "" {
		t.Errorf("kustomization resources vs files on disk (-disk +listed):\n%s", diff)
	}
	for _, g := range k.ConfigMapGenerator {
		for _, f := range g.Files {
			if _, err := os.Stat(filepath.Join("kubernetes", f)); err != nil {
				t.Errorf("configMapGenerator %s: %v", g.Name, err)
			}
		}
	}
}
