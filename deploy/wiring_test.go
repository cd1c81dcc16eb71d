package deploy

import (
	"net/url"
	"os"
	"path"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// base holds the kustomize base's objects by kind.
type base struct {
	k          kustomization
	deployment *deployment
	service    *service
	pdb        *pdb
	cluster    *cluster
	sa         *object
}

func loadBase(t *testing.T) base {
	t.Helper()
	b := base{k: readKustomization(t)}
	for _, r := range b.k.Resources {
		for _, o := range decodeFile(t, "kubernetes/"+r) {
			switch o.Kind {
			case "Deployment":
				b.deployment = &deployment{}
				o.as(t, b.deployment)
			case "Service":
				b.service = &service{}
				o.as(t, b.service)
			case "PodDisruptionBudget":
				b.pdb = &pdb{}
				o.as(t, b.pdb)
			case "Cluster":
				b.cluster = &cluster{}
				o.as(t, b.cluster)
			case "ServiceAccount":
				b.sa = &o
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
	c := checkPod(t, pod.Spec)

	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Error("Deployment: want at least 2 replicas")
	}
	if !selects(d.Spec.Selector.MatchLabels, pod.Metadata.Labels) {
		t.Errorf("Deployment selector %v does not match its pod labels %v", d.Spec.Selector.MatchLabels, pod.Metadata.Labels)
	}
	if !selects(b.service.Spec.Selector, pod.Metadata.Labels) {
		t.Errorf("Service selector %v does not match the pods", b.service.Spec.Selector)
	}
	if !selects(b.pdb.Spec.Selector.MatchLabels, pod.Metadata.Labels) {
		t.Errorf("PDB selector does not match the pods")
	}
	if m, ok := b.pdb.Spec.MinAvailable.(float64); !ok || m < 1 || int(m) >= *d.Spec.Replicas {
		t.Errorf("PDB minAvailable %v: want 1 <= n < replicas so drains can proceed", b.pdb.Spec.MinAvailable)
	}
	for _, p := range b.service.Spec.Ports {
		if p.TargetPort != "http" {
			t.Errorf("Service port %s targets %v, want the named port http", p.Name, p.TargetPort)
		}
	}

	// DATABASE_URL comes from the Secret CloudNativePG generates: <cluster>-app, key uri.
	if name, key := databaseSecret(c); name != b.cluster.Metadata.Name+"-app" || key != "uri" {
		t.Errorf("DATABASE_URL: want secretKeyRef %s-app/uri, got %s/%s", b.cluster.Metadata.Name, name, key)
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
	if pod.Spec.ServiceAccountName != b.sa.Metadata.Name {
		t.Errorf("pod service account %q, want %q", pod.Spec.ServiceAccountName, b.sa.Metadata.Name)
	}
	if len(b.k.Images) != 1 || b.k.Images[0].Name != c.Image {
		t.Errorf("kustomize images %+v do not rewrite the container image %q", b.k.Images, c.Image)
	}
	// A moving tag with IfNotPresent leaves each node on whatever it pulled first.
	if img := b.k.Images[0]; img.NewTag == "" || img.NewTag == "latest" {
		t.Errorf("kustomize image tag %q: want a version tag (or a digest), never latest", img.NewTag)
	}
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
		var p struct {
			Spec struct {
				Channel string `json:"channel"`
				Upgrade *struct {
					Image string `json:"image"`
				} `json:"upgrade"`
			} `json:"spec"`
		}
		o.as(t, &p)
		u, err := url.Parse(p.Spec.Channel)
		if err != nil || !strings.HasPrefix(p.Spec.Channel, cfg.ExternalURL+"/v1-release/channels/") {
			t.Errorf("Plan %s: channel %q is not under %s/v1-release/channels/", o.Metadata.Name, p.Spec.Channel, cfg.ExternalURL)
			continue
		}
		if name := path.Base(u.Path); !channels[name] {
			t.Errorf("Plan %s: channel %q is not in kubernetes/tidemark.yaml", o.Metadata.Name, name)
		}
		if p.Spec.Upgrade == nil || p.Spec.Upgrade.Image != "rancher/k3s-upgrade" {
			t.Errorf("Plan %s: want upgrade image rancher/k3s-upgrade", o.Metadata.Name)
		}
	}
}
