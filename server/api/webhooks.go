package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/server/core"
	"github.com/tidemark-dev/tidemark/server/webhooks"
)

// MaxWebhookBody bounds a webhook payload (CONTRACT section 12): Docker
// Hub's carries the Dockerfile and README, a distribution envelope up to
// its threshold of events.
const MaxWebhookBody = 1 << 20

// registerWebhooks adds the registry webhook routes. Each checks the
// credentials its sender puts in headers or the path before it reads the
// body; GitHub signs the body, so its body is read (up to the limit)
// first.
func (s *API) registerWebhooks(e *echo.Echo) {
	for _, kind := range []string{"distribution", "harbor", "quay", "github"} {
		e.POST("/api/v1/webhooks/"+kind, s.webhook(kind), s.DBDeadline)
	}
	e.POST(core.DockerHubWebhookPrefix+":secret", s.webhook("dockerhub"), s.DBDeadline)
	s.Get(e, "/api/v1/notifications", s.notifications, s.DBDeadline, s.RequireRead())
}

func (s *API) webhook(kind string) echo.HandlerFunc {
	return func(c echo.Context) error {
		received := time.Now()
		if kind != "github" {
			if err := s.authenticateWebhook(c, kind, nil); err != nil {
				s.Metrics.Webhooks.WithLabelValues(kind, "rejected").Inc()
				return err
			}
		}
		body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, MaxWebhookBody))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				err = fmt.Errorf("%w: %s webhook payload is over the limit of %d bytes", core.ErrBodyTooLarge, kind, tooLarge.Limit)
			}
			s.Metrics.Webhooks.WithLabelValues(kind, "rejected").Inc()
			return err
		}
		if kind == "github" {
			if err := s.authenticateWebhook(c, kind, body); err != nil {
				s.Metrics.Webhooks.WithLabelValues(kind, "rejected").Inc()
				return err
			}
		}
		if kind == "github" && c.Request().Header.Get("X-GitHub-Event") != "package" &&
			c.Request().Header.Get("X-GitHub-Event") != "registry_package" {
			// ping, or an event this hook was subscribed to by mistake.
			return c.JSON(http.StatusAccepted, openapi.WebhookResult{})
		}
		evs, err := webhooks.Parse(kind, body)
		if err != nil {
			s.Metrics.Webhooks.WithLabelValues(kind, "rejected").Inc()
			return err
		}
		if s.Opts.Push == nil {
			s.Metrics.Webhooks.WithLabelValues(kind, "unavailable").Inc()
			return fmt.Errorf("%w: this replica does not index (started with --no-index); send webhooks to one that does", resolver.ErrUnavailable)
		}
		res := openapi.WebhookResult{Tags: len(evs)}
		for _, ev := range evs {
			n, err := s.Opts.Push(c.Request().Context(), ev, received)
			if err != nil {
				s.Metrics.Webhooks.WithLabelValues(kind, "queue_full").Inc()
				c.Response().Header().Set("Retry-After", "1")
				return err
			}
			if n > 0 {
				res.Queued++
				s.Metrics.Webhooks.WithLabelValues(kind, "queued").Inc()
			} else {
				res.Ignored++
				s.Metrics.Webhooks.WithLabelValues(kind, "unknown_repository").Inc()
				s.Log.Debug("webhook for a repository no source indexes", "kind", kind, "host", ev.Host, "repository", ev.Repository, "tag", ev.Tag)
			}
		}
		if len(evs) == 0 {
			s.Metrics.Webhooks.WithLabelValues(kind, "no_tag").Inc()
		}
		return c.JSON(http.StatusAccepted, res)
	}
}

// authenticateWebhook checks what each registry can send: GitHub signs
// the body with a shared secret; Docker Hub can send no header, so its
// secret is in the path; the others send a bearer token with scope scan
// (or, for registries that cannot set a header, ?access_token=, RFC 6750).
func (s *API) authenticateWebhook(c echo.Context, kind string, body []byte) error {
	switch kind {
	case "github":
		return s.CredentialFailed(c, webhooks.CheckGitHubSignature(s.Opts.GitHubSecret, c.Request().Header.Get("X-Hub-Signature-256"), body))
	case "dockerhub":
		return s.CredentialFailed(c, webhooks.CheckPathSecret(s.Opts.DockerHubSecret, c.Param("secret")))
	}
	p, err := s.Authenticate(c, true)
	if err != nil {
		return err
	}
	// No per-token write limit: a registry sends a burst of events per
	// push, each is cheap (a queued tag), and a 429 would only delay them.
	if !core.Allows(p.Scopes, core.ScopeScan) {
		return fmt.Errorf("%w: token %q has scopes [%s]; webhooks need %s", resolver.ErrForbidden, p.Name, strings.Join(p.Scopes, ","), core.Enough(core.ScopeScan))
	}
	if err := core.MayReach(p, core.ReachSource, ""); err != nil {
		return err
	}
	c.Set(core.ActorKey, p.Name)
	return nil
}
