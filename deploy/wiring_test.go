package deploy

import (
	"net/url"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// base decodes the kustomize base into its objects by kind.
type base struct {
	k          kustomization
	deployment *appsv1.Deployment
	service    *corev1.Service
	pdb        *policyv1.PodDisruptionBudget
	cluster    *cnpgCluster
	sa         *corev1.ServiceAccount
}

func loadBase(t *testing.T) base {
	t.Helper()
	b := base{k: readKustomization(t)}
	for _, r := range b.k.Resources {
		for _, o := range decodeFile(t, "kubernetes/"+r) {
			switch v := o.obj.(type) {
			case *appsv1.Deployment:
				b.deployment = v
			case *corev1.Service:
				b.service = v
			case *policyv1.PodDisruptionBudget:
				b.pdb = v
			case *cnpgCluster:
				b.cluster = v
			case *corev1.ServiceAccount:
				b.sa = v
			}
		}
	}
	if b.deployment == nil || b.service == nil || b.pdb == nil || b.cluster == nil || b.sa == nil {
		t.Fatalf("the base lacks a Deployment, Service, PodDisruptionBudget, Cluster or ServiceAccount")
	}
	return b
}

// The pieces only work together when names, ports and labels agree; no
// cluster is needed to check that.
func TestBaseIsWiredTogether(t *testing.T) {
	b := loadBase(t)
	d := b.deployment
	pod := d.Spec.Template
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]

	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Error("Deployment: want at least 2 replicas")
	}
	sel, err := labelsSelector(d.Spec.Selector.MatchLabels)
	if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
		t.Errorf("Deployment selector %v does not match its pod labels %v", d.Spec.Selector.MatchLabels, pod.Labels)
	}
	if sel, _ := labelsSelector(b.service.Spec.Selector); !sel.Matches(labels.Set(pod.Labels)) {
		t.Errorf("Service selector %v does not match the pods", b.service.Spec.Selector)
	}
	if sel, _ := labelsSelector(b.pdb.Spec.Selector.MatchLabels); !sel.Matches(labels.Set(pod.Labels)) {
		t.Errorf("PDB selector does not match the pods")
	}
	if m := b.pdb.Spec.MinAvailable; m == nil || m.IntValue() < 1 || m.IntValue() >= int(*d.Spec.Replicas) {
		t.Errorf("PDB minAvailable %v: want 1 <= n < replicas so drains can proceed", m)
	}

	port := namedPort(c, "http")
	if port != 8080 {
		t.Errorf("container port http = %d, want 8080", port)
	}
	for _, p := range b.service.Spec.Ports {
		if p.TargetPort.String() != "http" {
			t.Errorf("Service port %s targets %s, want the named port http", p.Name, p.TargetPort.String())
		}
	}
	probe := func(name string, p *corev1.Probe, want string) {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want || p.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe: want GET %s on port http, got %+v", name, want, p)
		}
	}
	probe("liveness", c.LivenessProbe, "/healthz")
	probe("readiness", c.ReadinessProbe, "/readyz")

	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Error("container: want cpu and memory requests and a memory limit")
	}
	psc, csc := pod.Spec.SecurityContext, c.SecurityContext
	switch {
	case psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot:
		t.Error("pod: want runAsNonRoot")
	case psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Error("pod: want seccomp RuntimeDefault")
	case csc == nil || csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem:
		t.Error("container: want readOnlyRootFilesystem")
	case csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation:
		t.Error("container: want allowPrivilegeEscalation false")
	case csc.Capabilities == nil || len(csc.Capabilities.Drop) != 1 || csc.Capabilities.Drop[0] != "ALL":
		t.Error("container: want capabilities drop [ALL]")
	}

	// DATABASE_URL comes from the Secret CloudNativePG generates: <cluster>-app, key uri.
	var db *corev1.EnvVar
	for i := range c.Env {
		if c.Env[i].Name == "DATABASE_URL" {
			db = &c.Env[i]
		}
	}
	wantSecret := b.cluster.Name + "-app"
	if db == nil || db.ValueFrom == nil || db.ValueFrom.SecretKeyRef == nil ||
		db.ValueFrom.SecretKeyRef.Name != wantSecret || db.ValueFrom.SecretKeyRef.Key != "uri" {
		t.Errorf("DATABASE_URL: want secretKeyRef %s/uri, got %+v", wantSecret, db)
	}
	if b.cluster.Spec.Instances != 3 {
		t.Errorf("CNPG Cluster: %d instances, want 3", b.cluster.Spec.Instances)
	}

	// --config must name the generated ConfigMap's file where it is mounted.
	if len(b.k.ConfigMapGenerator) != 1 || len(b.k.ConfigMapGenerator[0].Files) != 1 {
		t.Fatal("want one configMapGenerator with one file")
	}
	gen := b.k.ConfigMapGenerator[0]
	mount := ""
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == gen.Name {
			for _, m := range c.VolumeMounts {
				if m.Name == v.Name {
					mount = m.MountPath
				}
			}
		}
	}
	wantArg := path.Join(mount, gen.Files[0])
	if mount == "" || !strings.Contains(strings.Join(c.Args, " "), "--config "+wantArg) {
		t.Errorf("args %q: want --config %s (the mounted %s)", c.Args, wantArg, gen.Name)
	}
	if pod.Spec.ServiceAccountName != b.sa.Name {
		t.Errorf("pod service account %q, want %q", pod.Spec.ServiceAccountName, b.sa.Name)
	}
	if len(b.k.Images) != 1 || b.k.Images[0].Name != c.Image {
		t.Errorf("kustomize images %+v do not rewrite the container image %q", b.k.Images, c.Image)
	}
}

func labelsSelector(m map[string]string) (labels.Selector, error) {
	if len(m) == 0 {
		return labels.Nothing(), nil
	}
	return labels.SelectorFromSet(m), nil
}

func namedPort(c corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

// Every Plan must follow a channel the deployed config declares, at the
// external_url the deployed Tidemark answers on.
func TestPlansFollowDeployedChannels(t *testing.T) {
	data, err := os.ReadFile("kubernetes/tidemark.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ExternalURL string `yaml:"external_url"`
		Channels    []struct {
			Name string `yaml:"name"`
		} `yaml:"channels"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	channels := map[string]bool{}
	for _, c := range cfg.Channels {
		channels[c.Name] = true
	}
	plans := decodeFile(t, "examples/suc-plan.yaml")
	if len(plans) == 0 {
		t.Fatal("no Plans")
	}
	for _, o := range plans {
		p := o.obj.(*sucPlan)
		u, err := url.Parse(p.Spec.Channel)
		if err != nil || !strings.HasPrefix(p.Spec.Channel, cfg.ExternalURL+"/v1-release/channels/") {
			t.Errorf("Plan %s: channel %q is not under %s/v1-release/channels/", p.Name, p.Spec.Channel, cfg.ExternalURL)
			continue
		}
		if name := path.Base(u.Path); !channels[name] {
			t.Errorf("Plan %s: channel %q is not in kubernetes/tidemark.yaml", p.Name, name)
		}
		if p.Spec.Upgrade == nil || p.Spec.Upgrade.Image != "rancher/k3s-upgrade" {
			t.Errorf("Plan %s: want upgrade image rancher/k3s-upgrade", p.Name)
		}
	}
}

func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(data)
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(string(gomod))
	if goVersion == nil {
		t.Fatal("no go directive in go.mod")
	}
	for _, want := range []string{
		"FROM --platform=$BUILDPLATFORM golang:" + goVersion[1] + " AS build\n",
		"CGO_ENABLED=0",
		"./cmd/tidemark\n",
		"FROM gcr.io/distroless/static-debian12:nonroot\n",
		"COPY --from=build /out/tidemark /tidemark\n",
		"USER nonroot\n",
		"EXPOSE 8080\n",
		`ENTRYPOINT ["/tidemark", "serve"]` + "\n",
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if i, j := strings.LastIndex(df, "\nFROM "), strings.Index(df, "USER nonroot"); j < i {
		t.Error("USER nonroot must be in the final stage")
	}
}
