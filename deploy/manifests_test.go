package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// CloudNativePG's Cluster and system-upgrade-controller's Plan have Go types
// only in their operators' modules, which would pull in controller-runtime.
// These local types cover exactly the fields the manifests use, under the
// same JSON names as upstream (postgresql.cnpg.io/v1 ClusterSpec,
// upgrade.cattle.io/v1 PlanSpec), and are decoded just as strictly: a field
// that is not here fails, so a new field must be added here on purpose.

type cnpgCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Instances             int    `json:"instances"`
		PrimaryUpdateStrategy string `json:"primaryUpdateStrategy,omitempty"`
		Bootstrap             struct {
			InitDB struct {
				Database string `json:"database"`
				Owner    string `json:"owner"`
			} `json:"initdb"`
		} `json:"bootstrap"`
		Storage struct {
			Size         string  `json:"size"`
			StorageClass *string `json:"storageClass,omitempty"`
		} `json:"storage"`
		Affinity struct {
			EnablePodAntiAffinity *bool  `json:"enablePodAntiAffinity,omitempty"`
			TopologyKey           string `json:"topologyKey,omitempty"`
		} `json:"affinity"`
		Resources corev1.ResourceRequirements `json:"resources"`
	} `json:"spec"`
}

type sucContainer struct {
	Image   string   `json:"image"`
	Command []string `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
}

type sucPlan struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Concurrency        int64                 `json:"concurrency"`
		Cordon             bool                  `json:"cordon,omitempty"`
		NodeSelector       *metav1.LabelSelector `json:"nodeSelector"`
		ServiceAccountName string                `json:"serviceAccountName"`
		Tolerations        []corev1.Toleration   `json:"tolerations,omitempty"`
		Channel            string                `json:"channel,omitempty"`
		Version            string                `json:"version,omitempty"`
		Prepare            *sucContainer         `json:"prepare,omitempty"`
		Upgrade            *sucContainer         `json:"upgrade"`
		Drain              *struct {
			Force                    bool `json:"force,omitempty"`
			SkipWaitForDeleteTimeout int  `json:"skipWaitForDeleteTimeout,omitempty"`
		} `json:"drain,omitempty"`
	} `json:"spec"`
}

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

// object is one decoded manifest document.
type object struct {
	file string
	obj  any
}

// newTyped returns the Go type a manifest of this apiVersion and kind must
// decode into; nil for a kind this test does not know, which fails.
func newTyped(apiVersion, kind string) any {
	switch apiVersion + " " + kind {
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}
	case "v1 Service":
		return &corev1.Service{}
	case "v1 ServiceAccount":
		return &corev1.ServiceAccount{}
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}
	case "v1 Secret":
		return &corev1.Secret{}
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "postgresql.cnpg.io/v1 Cluster":
		return &cnpgCluster{}
	case "upgrade.cattle.io/v1 Plan":
		return &sucPlan{}
	}
	return nil
}

// decodeFile decodes every YAML document of a manifest file strictly.
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

func decodeAll(data []byte) ([]object, error) {
	var out []object
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, err
		}
		if tm.APIVersion == "" && tm.Kind == "" {
			continue // a document of comments only
		}
		obj := newTyped(tm.APIVersion, tm.Kind)
		if obj == nil {
			return nil, errors.New("no Go type for " + tm.APIVersion + " " + tm.Kind + ": add one to newTyped")
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, errors.New(tm.Kind + ": " + err.Error())
		}
		out = append(out, object{obj: obj})
	}
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
