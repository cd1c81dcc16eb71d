package main

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// CloudNativePG's Cluster, system-upgrade-controller's Plan and the
// Prometheus operator's ServiceMonitor and PrometheusRule have Go types only
// in their operators' modules, which would pull in controller-runtime. These
// cover exactly the fields Tidemark's manifests and chart use, under the
// same JSON names as upstream (postgresql.cnpg.io/v1 ClusterSpec,
// upgrade.cattle.io/v1 PlanSpec, monitoring.coreos.com/v1), so a field not
// listed here fails the tests and must be added here on purpose.

type cnpgCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Instances             int    `json:"instances"`
		ImageName             string `json:"imageName,omitempty"`
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
		Monitoring *struct {
			EnablePodMonitor bool `json:"enablePodMonitor,omitempty"`
		} `json:"monitoring,omitempty"`
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

type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port          string              `json:"port,omitempty"`
			TargetPort    *intstr.IntOrString `json:"targetPort,omitempty"`
			Path          string              `json:"path,omitempty"`
			Interval      string              `json:"interval,omitempty"`
			ScrapeTimeout string              `json:"scrapeTimeout,omitempty"`
		} `json:"endpoints"`
		NamespaceSelector *struct {
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector,omitempty"`
	} `json:"spec"`
}

type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Groups []struct {
			Name     string `json:"name"`
			Interval string `json:"interval,omitempty"`
			Rules    []struct {
				Alert       string             `json:"alert,omitempty"`
				Record      string             `json:"record,omitempty"`
				Expr        intstr.IntOrString `json:"expr"`
				For         string             `json:"for,omitempty"`
				Labels      map[string]string  `json:"labels,omitempty"`
				Annotations map[string]string  `json:"annotations,omitempty"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}
