// Command kubeshapes writes deploy/testdata/kube-shapes.json: the field
// names and JSON types of exactly the Kubernetes kinds Tidemark's manifests
// and Helm chart use, taken from the k8s.io/api Go types by reflection.
//
// The deploy tests validate every manifest against that file as strictly as
// decoding into the Go types would (an unknown or misplaced field, or a
// wrong type, fails), without the root module downloading k8s.io/api
// (313 MB of modules) on every cold `make test`. This is a module of its
// own so only `make kube-shapes` pays for it.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// kinds maps "apiVersion kind" to a zero value of its Go type.
var kinds = map[string]any{
	"apps/v1 Deployment":                      appsv1.Deployment{},
	"v1 Service":                              corev1.Service{},
	"v1 ServiceAccount":                       corev1.ServiceAccount{},
	"v1 ConfigMap":                            corev1.ConfigMap{},
	"v1 Secret":                               corev1.Secret{},
	"policy/v1 PodDisruptionBudget":           policyv1.PodDisruptionBudget{},
	"networking.k8s.io/v1 Ingress":            networkingv1.Ingress{},
	"networking.k8s.io/v1 NetworkPolicy":      networkingv1.NetworkPolicy{},
	"postgresql.cnpg.io/v1 Cluster":           cnpgCluster{},
	"upgrade.cattle.io/v1 Plan":               sucPlan{},
	"monitoring.coreos.com/v1 ServiceMonitor": serviceMonitor{},
	"monitoring.coreos.com/v1 PrometheusRule": prometheusRule{},
}

// Shapes is the file's content.
type Shapes struct {
	Kinds map[string]string            `json:"kinds"` // "apiVersion kind" -> type
	Types map[string]map[string]string `json:"types"` // type -> field -> type
}

func main() {
	out := "../../testdata/kube-shapes.json"
	if len(os.Args) > 1 {
		out = os.Args[1]
	}
	data, err := generate()
	if err == nil {
		err = os.WriteFile(out, data, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeshapes:", err)
		os.Exit(1)
	}
}

func generate() ([]byte, error) {
	s := Shapes{Kinds: map[string]string{}, Types: map[string]map[string]string{}}
	for k, v := range kinds {
		if v == nil {
			continue
		}
		s.Kinds[k] = shape(s.Types, reflect.TypeOf(v), "")
	}
	data, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

var special = map[reflect.Type]string{
	reflect.TypeOf(resource.Quantity{}):    "quantity",
	reflect.TypeOf(intstr.IntOrString{}):   "int-or-string",
	reflect.TypeOf(metav1.Time{}):          "string",
	reflect.TypeOf(metav1.MicroTime{}):     "string",
	reflect.TypeOf(metav1.Duration{}):      "string",
	reflect.TypeOf(runtime.RawExtension{}): "any",
	reflect.TypeOf(metav1.FieldsV1{}):      "any",
	reflect.TypeOf([]byte(nil)):            "string",
}

// shape names t's JSON shape, recording struct types in types.
func shape(types map[string]map[string]string, t reflect.Type, hint string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := special[t]; ok {
		return s
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "[]" + shape(types, t.Elem(), hint+"[]")
	case reflect.Map:
		return "map[string]" + shape(types, t.Elem(), hint+"{}")
	case reflect.Interface:
		return "any"
	case reflect.Struct:
		name := typeName(t)
		if t.Name() == "" {
			name = hint // an anonymous struct: named by where it sits
		}
		if _, ok := types[name]; ok {
			return name
		}
		fields := map[string]string{}
		types[name] = fields // before recursing: types may refer to themselves
		addFields(types, fields, t, name)
		return name
	}
	panic("kubeshapes: no shape for " + t.String())
}

func addFields(types map[string]map[string]string, fields map[string]string, t reflect.Type, parent string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if (f.Anonymous && name == "") || strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			addFields(types, fields, ft, parent)
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = shape(types, f.Type, parent+"."+name)
	}
}

// typeName is short and stable: the package's last two path elements and
// the type, e.g. "api/core/v1.PodSpec"; local CRD types get "local.".
func typeName(t reflect.Type) string {
	p := t.PkgPath()
	if p == reflect.TypeOf(cnpgCluster{}).PkgPath() {
		return "local." + t.Name()
	}
	parts := strings.Split(p, "/")
	if len(parts) > 3 {
		parts = parts[len(parts)-3:]
	}
	return strings.Join(parts, "/") + "." + t.Name()
}
