package resolver

import "strings"

// AlertChannelLabel names the channel whose rollout a firing alert halts.
const AlertChannelLabel = "tidemark_channel"

// Alert is one alert of an Alertmanager group, as the halt policy reads it.
type Alert struct {
	Status      string // "firing" or "resolved"
	Labels      map[string]string
	Annotations map[string]string
}

// AlertHalt is a channel whose rollout an alert asks to halt, and the
// reason the audit records.
type AlertHalt struct {
	Channel, Alertname, Reason string
}

// HaltsFor is the alert-to-halt policy (docs/rollouts.md): every firing
// alert labelled tidemark_channel asks to halt that channel's rollout,
// with the reason "<alertname>: <summary>". Resolved alerts change
// nothing: resuming is a person's decision.
func HaltsFor(alerts []Alert) []AlertHalt {
	var out []AlertHalt
	for _, a := range alerts {
		name := a.Labels[AlertChannelLabel]
		if a.Status != "firing" || name == "" {
			continue
		}
		h := AlertHalt{Channel: name, Alertname: a.Labels["alertname"], Reason: a.Labels["alertname"]}
		if sum := strings.TrimSpace(a.Annotations["summary"]); sum != "" {
			h.Reason += ": " + sum
		}
		out = append(out, h)
	}
	return out
}
