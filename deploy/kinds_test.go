package deploy

import (
	"fmt"
	"testing"
)

// Loose views of the kinds the wiring tests look into: only the fields they
// check. Strictness comes from the shape check in decodeAll, not from these.

type deployment struct {
	Metadata struct{ Name string } `json:"metadata"`
	Spec     struct {
		Replicas *int `json:"replicas"`
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec podSpec `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

type podSpec struct {
	ServiceAccountName string `json:"serviceAccountName"`
	SecurityContext    *struct {
		RunAsNonRoot   *bool `json:"runAsNonRoot"`
		RunAsUser      *int  `json:"runAsUser"`
		SeccompProfile *struct {
			Type string `json:"type"`
		} `json:"seccompProfile"`
	} `json:"securityContext"`
	Containers []container `json:"containers"`
	Volumes    []struct {
		Name      string `json:"name"`
		ConfigMap *struct {
			Name string `json:"name"`
		} `json:"configMap"`
	} `json:"volumes"`
}

type container struct {
	Name            string   `json:"name"`
	Image           string   `json:"image"`
	ImagePullPolicy string   `json:"imagePullPolicy"`
	Args            []string `json:"args"`
	Env             []struct {
		Name      string `json:"name"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `json:"name"`
				Key  string `json:"key"`
			} `json:"secretKeyRef"`
		} `json:"valueFrom"`
	} `json:"env"`
	Ports []struct {
		Name          string `json:"name"`
		ContainerPort int    `json:"containerPort"`
	} `json:"ports"`
	LivenessProbe  *probe `json:"livenessProbe"`
	ReadinessProbe *probe `json:"readinessProbe"`
	Resources      struct {
		Requests map[string]any `json:"requests"`
		Limits   map[string]any `json:"limits"`
	} `json:"resources"`
	SecurityContext *struct {
		ReadOnlyRootFilesystem   *bool `json:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation"`
		Capabilities             *struct {
			Drop []string `json:"drop"`
		} `json:"capabilities"`
	} `json:"securityContext"`
	VolumeMounts []struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
	} `json:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Path string `json:"path"`
		Port any    `json:"port"`
	} `json:"httpGet"`
}

type service struct {
	Spec struct {
		Selector map[string]string `json:"selector"`
		Ports    []struct {
			Name       string `json:"name"`
			TargetPort any    `json:"targetPort"`
		} `json:"ports"`
	} `json:"spec"`
}

type pdb struct {
	Spec struct {
		MinAvailable any `json:"minAvailable"`
		Selector     struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
	} `json:"spec"`
}

type cluster struct {
	Metadata struct{ Name string } `json:"metadata"`
	Spec     struct {
		Instances int `json:"instances"`
	} `json:"spec"`
}

// selects reports whether a non-empty selector matches labels.
func selects(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// checkPod holds what every Tidemark pod must be, however it was rendered:
// one container, named http port 8080, probes on it, requests and a memory
// limit, non-root and locked down, DATABASE_URL from a Secret's key.
func checkPod(t *testing.T, pod podSpec) container {
	t.Helper()
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	port := 0
	for _, p := range c.Ports {
		if p.Name == "http" {
			port = p.ContainerPort
		}
	}
	if port != 8080 {
		t.Errorf("container port http = %d, want 8080", port)
	}
	checkProbe := func(name string, p *probe, want string) {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want || fmt.Sprint(p.HTTPGet.Port) != "http" {
			t.Errorf("%s probe: want GET %s on port http, got %+v", name, want, p)
		}
	}
	checkProbe("liveness", c.LivenessProbe, "/healthz")
	checkProbe("readiness", c.ReadinessProbe, "/readyz")
	if c.Resources.Requests["cpu"] == nil || c.Resources.Requests["memory"] == nil || c.Resources.Limits["memory"] == nil {
		t.Error("container: want cpu and memory requests and a memory limit")
	}
	psc, csc := pod.SecurityContext, c.SecurityContext
	switch {
	case psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot:
		t.Error("pod: want runAsNonRoot")
	case psc.RunAsUser == nil || *psc.RunAsUser != 65532:
		t.Error("pod: want runAsUser 65532, the image's user")
	case psc.SeccompProfile == nil || psc.SeccompProfile.Type != "RuntimeDefault":
		t.Error("pod: want seccomp RuntimeDefault")
	case csc == nil || csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem:
		t.Error("container: want readOnlyRootFilesystem")
	case csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation:
		t.Error("container: want allowPrivilegeEscalation false")
	case csc.Capabilities == nil || len(csc.Capabilities.Drop) != 1 || csc.Capabilities.Drop[0] != "ALL":
		t.Error("container: want capabilities drop [ALL]")
	}
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Errorf("args %q: want serve first (the image's entrypoint is the bare binary)", c.Args)
	}
	return c
}

// databaseSecret returns the Secret name and key DATABASE_URL comes from.
func databaseSecret(c container) (name, key string) {
	for _, e := range c.Env {
		if e.Name == "DATABASE_URL" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			return e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key
		}
	}
	return "", ""
}
