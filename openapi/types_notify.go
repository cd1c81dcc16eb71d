package openapi

import (
	"encoding/json"
	"time"
)

// The wire types of notifications: the outbox as the API lists it, and
// the bodies Tidemark sends to endpoints.

// Notifications is GET /api/v1/notifications: the newest outbox events,
// newest first, and each endpoint's delivery state.
type Notifications struct {
	Events    []NotificationEvent    `json:"events"`
	Endpoints []NotificationEndpoint `json:"endpoints"`
}

// NotificationEvent is one outbox event and where it has been delivered.
type NotificationEvent struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Time    string `json:"time"`
	Channel string `json:"channel"`
	Source  string `json:"source"`
	From    string `json:"from"`
	To      string `json:"to"`
	Actor   string `json:"actor"`
	Reason  string `json:"reason"`
	// Deliveries maps endpoint name to "delivered", "pending" or "failing";
	// an endpoint that does not want the event is left out.
	Deliveries map[string]string `json:"deliveries"`
}

// NotificationEndpoint is one configured endpoint's delivery state.
type NotificationEndpoint struct {
	Name        string  `json:"name"`
	Kind        string  `json:"kind"`
	Backlog     int     `json:"backlog"`
	Attempts    int     `json:"attempts"`
	LastError   string  `json:"last_error"`
	NextAttempt *string `json:"next_attempt"`
	DeliveredAt *string `json:"delivered_at"`
}

// CloudEvent is the structured-mode CloudEvents 1.0 body Tidemark POSTs to
// a notification endpoint (webhooks: notification in openapi.yaml).
type CloudEvent struct {
	SpecVersion     string         `json:"specversion"`
	ID              string         `json:"id"`
	Source          string         `json:"source"`
	Type            string         `json:"type"`
	Subject         string         `json:"subject,omitempty"`
	Time            time.Time      `json:"time"`
	DataContentType string         `json:"datacontenttype"`
	Data            CloudEventData `json:"data"`
}

// CloudEventData is a notification event's data.
type CloudEventData struct {
	Channel string `json:"channel,omitempty"`
	Source  string `json:"source"`
	From    string `json:"from"`
	To      string `json:"to"`
	Actor   string `json:"actor"`
	Reason  string `json:"reason"`
	// Line, End and Clusters are a line event's (dev.tidemark.line.*),
	// whose data is {source, line, end, clusters} only (MarshalJSON).
	Line     string     `json:"line,omitempty"`
	End      *time.Time `json:"end,omitempty"`
	Clusters *int       `json:"clusters,omitempty"`
}

// lineEventData is a line event's data as sent: end is null for a line
// with no end.
type lineEventData struct {
	Source   string     `json:"source"`
	Line     string     `json:"line"`
	End      *time.Time `json:"end"`
	Clusters int        `json:"clusters"`
}

// MarshalJSON sends a line event's data as {source, line, end, clusters}
// and every other event's as it is.
func (d CloudEventData) MarshalJSON() ([]byte, error) {
	if d.Line != "" {
		n := 0
		if d.Clusters != nil {
			n = *d.Clusters
		}
		return json.Marshal(lineEventData{Source: d.Source, Line: d.Line, End: d.End, Clusters: n})
	}
	type plain CloudEventData
	return json.Marshal(plain(d))
}

// SlackMessage is the body Tidemark POSTs to a Slack incoming webhook.
type SlackMessage struct {
	Text string `json:"text"`
}
