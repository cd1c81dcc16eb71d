package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
)

// SignatureHeader carries sha256=<hex HMAC-SHA256 of the body> with the
// endpoint's secret.
const SignatureHeader = "X-Tidemark-Signature-256"

// CloudEvent is the structured-mode CloudEvents 1.0 JSON body; EventData
// its data. Both are wire types of openapi.yaml's webhooks section.
type (
	CloudEvent = openapi.CloudEvent
	EventData  = openapi.CloudEventData
)

// EventID is an event's CloudEvents id: the outbox row's, so that every
// retry of one event carries the same id and receivers can deduplicate.
func EventID(e resolver.Event) string { return "tidemark-" + strconv.FormatInt(e.ID, 10) }

// Body is what an endpoint of kind receives for e.
func Body(kind, source string, e resolver.Event) ([]byte, string, error) {
	if kind == "slack" {
		b, err := json.Marshal(openapi.SlackMessage{Text: slackEscape(Text(e))})
		return b, "application/json", err
	}
	subject := e.Channel
	if subject == "" {
		subject = e.Source + "/" + e.To + e.From // a block's version, or a risk's name
	}
	data := EventData{Channel: e.Channel, Source: e.Source, From: e.From, To: e.To, Actor: e.Actor, Reason: e.Reason}
	if isLine(e) {
		subject, data = e.Source+"/"+e.To, lineData(e)
	}
	b, err := json.Marshal(CloudEvent{
		SpecVersion: "1.0", ID: EventID(e), Source: source, Type: e.Type, Subject: subject,
		Time: e.At.UTC(), DataContentType: "application/json", Data: data,
	})
	return b, "application/cloudevents+json", err
}

// slackEscape makes text literal in Slack's mrkdwn: "<!channel>" would ping
// everyone and "<http://x|label>" would disguise a link. Slack asks for
// exactly these three escapes.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace

// Text is the event for a person (Slack).
func Text(e resolver.Event) string {
	none := func(v string) string {
		if v == "" {
			return "nothing"
		}
		return v
	}
	var s string
	switch e.Type {
	case resolver.EventVersionBlocked:
		s = fmt.Sprintf("Version %s of %s was blocked by %s", e.To, e.Source, e.Actor)
	case resolver.EventRiskChanged:
		if e.To != "" {
			s = fmt.Sprintf("Risk %s of %s was declared by %s", e.To, e.Source, e.Actor)
		} else {
			s = fmt.Sprintf("Risk %s of %s was removed by %s", e.From, e.Source, e.Actor)
		}
	case resolver.EventLineDeprecated, resolver.EventLineExpired:
		d := lineData(e)
		s = fmt.Sprintf("Line %s of %s is %s", e.To, e.Source, strings.TrimPrefix(e.Type, "dev.tidemark.line."))
		if d.End != nil {
			s += fmt.Sprintf(" (its end: %s)", d.End.Format(time.DateOnly))
		}
		return s + fmt.Sprintf("; %d active clusters run it", *d.Clusters)
	case resolver.EventRolloutChanged:
		s = fmt.Sprintf("Rollout of channel %s (%s -> %s) changed, by %s", e.Channel, none(e.From), none(e.To), e.Actor)
	default:
		s = fmt.Sprintf("Channel %s now serves %s (was %s), by %s", e.Channel, none(e.To), none(e.From), e.Actor)
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// withSource names a channel's event's source when the event was written
// without one (a rollout's, whose store write knows only the channel),
// from the configuration: data.source is the channel's source.
func (d *Deliverer) withSource(e resolver.Event) resolver.Event {
	if e.Source == "" && e.Channel != "" {
		e.Source = d.opts.ChannelSources[e.Channel]
	}
	return e
}

// Sign is the signature header's value for body.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// send POSTs e to the endpoint; any answer but 2xx is a failure.
func (d *Deliverer) send(ctx context.Context, ep Endpoint, e resolver.Event) error {
	body, ct, err := Body(ep.Kind, d.opts.Source, d.withSource(e))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("endpoint %q: %w", ep.Name, err)
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("User-Agent", "tidemark")
	if ep.Secret != nil {
		secret, err := ep.Secret()
		if err != nil {
			return fmt.Errorf("endpoint %q: reading its secret: %w", ep.Name, err)
		}
		req.Header.Set(SignatureHeader, Sign(secret, body))
	}
	res, err := d.opts.Client.Do(req)
	if err != nil {
		// A *url.Error names the whole URL, whose path or query may be the
		// endpoint's secret (a Slack webhook's path is its token).
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("POST %s: %w", RedactURL(ep.URL), err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	if res.StatusCode/100 == 3 {
		return fmt.Errorf("POST %s: %s: a redirect is not a delivery and is not followed", RedactURL(ep.URL), res.Status)
	}
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s", RedactURL(ep.URL), res.Status)
	}
	return nil
}

// RedactURL is raw as it may appear in the API, logs, metrics and errors:
// scheme://host[:port]/… only, since an endpoint's path or query may be its
// secret.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(not a URL)"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

// NewClient is the HTTP client deliveries use: it never follows a
// redirect (the receiver's 3xx is answered as a failure, so a receiver
// cannot point Tidemark's signed POSTs at another address).
func NewClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
