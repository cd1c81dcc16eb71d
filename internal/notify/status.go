package notify

import (
	"context"
	"time"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
)

// Status lists the newest limit events, newest first, with where each has
// been delivered, and every configured endpoint's state
// (GET /api/v1/notifications).
func (d *Deliverer) Status(ctx context.Context, limit int) (openapi.Notifications, error) {
	events, cursors, err := d.opts.Store.RecentEvents(ctx, limit)
	if err != nil {
		return openapi.Notifications{}, err
	}
	byName := map[string]resolver.NotifyCursor{}
	for _, c := range cursors {
		byName[c.Endpoint] = c
	}
	// The event an endpoint is stuck on is its oldest wanted one not yet
	// delivered; those after it merely wait.
	head := map[string]resolver.Event{}
	for _, e := range events {
		for _, ep := range d.opts.Endpoints {
			if c, ok := byName[ep.Name]; ok && !c.Delivered(e) && d.filters[ep.Name].Wants(e) {
				if h, seen := head[ep.Name]; !seen || e.XID < h.XID || (e.XID == h.XID && e.ID < h.ID) {
					head[ep.Name] = e
				}
			}
		}
	}
	out := openapi.Notifications{Events: []openapi.NotificationEvent{}, Endpoints: []openapi.NotificationEndpoint{}}
	for _, e := range events {
		e = d.withSource(e)
		ne := openapi.NotificationEvent{
			ID: EventID(e), Type: e.Type, Time: e.At.UTC().Format(time.RFC3339Nano),
			Channel: e.Channel, Source: e.Source, From: e.From, To: e.To, Actor: e.Actor, Reason: e.Reason,
			Deliveries: map[string]string{},
		}
		for _, ep := range d.opts.Endpoints {
			c, ok := byName[ep.Name]
			if !ok || !d.filters[ep.Name].Wants(e) {
				continue
			}
			switch {
			case c.Delivered(e):
				ne.Deliveries[ep.Name] = "delivered"
			case c.Attempts > 0 && e.ID == head[ep.Name].ID:
				ne.Deliveries[ep.Name] = "failing"
			default:
				ne.Deliveries[ep.Name] = "pending"
			}
		}
		out.Events = append(out.Events, ne)
	}
	for _, ep := range d.opts.Endpoints {
		st := openapi.NotificationEndpoint{Name: ep.Name, Kind: ep.Kind}
		if c, ok := byName[ep.Name]; ok {
			st.Attempts, st.LastError = c.Attempts, c.LastError
			if c.Attempts > 0 {
				st.NextAttempt = timeString(c.NextAttempt)
			}
			if !c.DeliveredAt.IsZero() {
				st.DeliveredAt = timeString(c.DeliveredAt)
			}
			n, err := d.opts.Store.Backlog(ctx, ep.Name, d.filters[ep.Name])
			if err != nil {
				return openapi.Notifications{}, err
			}
			st.Backlog = n
		}
		out.Endpoints = append(out.Endpoints, st)
	}
	return out, nil
}

func timeString(t time.Time) *string {
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}
