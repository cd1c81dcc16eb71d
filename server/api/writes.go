package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/door"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server/core"
)

// WriteReloadTimeout bounds the snapshot reload after a write.
const WriteReloadTimeout = 10 * time.Second

// registerWrites adds the release-engineering routes.
func (s *API) registerWrites(e *echo.Echo) {
	promote := s.RequireScope(core.ScopePromote)
	e.PUT("/api/v1/channels/:name/pin", s.pin, s.DBDeadline, s.RequireChannelScope(core.ScopePromote))
	e.DELETE("/api/v1/channels/:name/pin", s.unpin, s.DBDeadline, s.RequireChannelScope(core.ScopePromote))
	e.PUT("/api/v1/sources/:source/versions/:version/block", s.block, s.DBDeadline, promote)
	e.DELETE("/api/v1/sources/:source/versions/:version/block", s.unblock, s.DBDeadline, promote)
	e.POST("/api/v1/sources/:source/scan", s.scan, s.DBDeadline, s.RequireScope(core.ScopeScan))
	e.DELETE("/api/v1/sources/:source/versions/:version/hold", s.liftHold, s.DBDeadline, s.RequireScope(core.ScopeAdmin))
	s.Get(e, "/api/v1/channels/:name/history", s.history, s.DBDeadline)
	s.registerRisks(e)
}

// pin promotes (or rolls back) a channel to a version. The checks are on the
// snapshot this replica serves; the If-Match check is on the database, in
// the store's transaction, so it holds across replicas and racing writers.
func (s *API) pin(c echo.Context) error {
	v, e, ifRev, err := s.channelWrite(c)
	if err != nil {
		return err
	}
	var req openapi.PinRequest
	if err := core.DecodeBody(c, &req, true); err != nil {
		return err
	}
	if req.Version == "" {
		return core.InvalidParam("version", "version is required")
	}
	ch := e.Ans.Channel
	change, err := v.Snap.PlanPin(ch.Name, req.Version, req.Force)
	if errors.Is(err, snapshot.ErrGatesPending) && s.Opts.Gate != nil {
		// Just started or just pushed: check the gates now rather than
		// refuse a pin for want of an answer, then plan again.
		if v, err = s.checkGatesNow(c.Request().Context(), ch.Source, req.Version); err != nil {
			return err
		}
		change, err = v.Snap.PlanPin(ch.Name, req.Version, req.Force)
	}
	if err != nil {
		return core.BadParam("version", err)
	}
	verdict, err := s.decideDoor(c, door.Change{Door: door.Pin, Channel: ch.Name, Override: req.OverrideFreeze,
		Target: change.Version, TargetLine: v.Snap.TargetLine(ch.Name, change.Version), AllowExpired: req.AllowExpired}, e)
	if err != nil {
		return err
	}
	req.Reason = withAllowExpired(req.Reason, verdict)
	if verdict.Outcome == door.Pending {
		return s.recordChange(c, e, resolver.ScheduledChange{Channel: ch.Name, Action: "pin", Version: change.Version,
			Reason: req.Reason, Force: req.Force, Rollback: req.Rollback, Override: verdict.Overridden})
	}
	change.Actor, change.Reason, change.IfRevision = core.Actor(c), req.Reason, ifRev
	change.Rollback = req.Rollback
	if _, err := s.Opts.Store.Pin(c.Request().Context(), change); err != nil {
		return fmt.Errorf("pin %q to %s: %w", ch.Name, change.Version, err)
	}
	if verdict.Overridden {
		s.moveHold(c.Request().Context(), e, change.Version)
	}
	return s.answerChannel(c, ch.Name, "pinned")
}

// moveHold makes an admin's override of a freeze take effect at once: the
// channel's hold moves to the version just pinned (or lifts, for an
// unpin, until the governor holds the new answer).
func (s *API) moveHold(ctx context.Context, e *core.Entry, version string) {
	h := e.Ans.State.Hold
	if h == nil || s.Opts.Governance == nil {
		return
	}
	var next *resolver.Hold
	if version != "" {
		moved := *h
		moved.Version = version
		next = &moved
	}
	if err := s.Opts.Governance.SetHold(ctx, e.Ans.Channel.Name, next); err != nil {
		s.Log.Warn("override of a freeze: could not move the hold; the pin waits for the freeze's end", "channel", e.Ans.Channel.Name, "err", err)
	}
}

// unpin lets the channel follow its stream again. A channel with a fixed
// `latest:` in configuration goes back to that version: a database pin
// overrides the configured one, and unpinning removes only the database pin.
func (s *API) unpin(c echo.Context) error {
	v, e, ifRev, err := s.channelWrite(c)
	if err != nil {
		return err
	}
	reason, err := core.ReasonOf(c)
	if err != nil {
		return err
	}
	name := e.Ans.Channel.Name
	change, err := v.Snap.PlanUnpin(name)
	if err != nil {
		return err
	}
	verdict, err := s.decide(c, door.Unpin, e, c.QueryParam("override_freeze") == "true")
	if err != nil {
		return err
	}
	if verdict.Outcome == door.Pending {
		if e.Ans.State.Pin == "" {
			return fmt.Errorf("%w: channel %q is not pinned", resolver.ErrNotFound, name)
		}
		return s.recordChange(c, e, resolver.ScheduledChange{Channel: name, Action: "unpin", Reason: reason, Override: verdict.Overridden})
	}
	change.Actor, change.Reason, change.IfRevision = core.Actor(c), reason, ifRev
	if _, err := s.Opts.Store.Unpin(c.Request().Context(), change); err != nil {
		return fmt.Errorf("unpin %q: %w", name, v.Snap.ExplainUnpin(name, err))
	}
	if verdict.Overridden {
		s.moveHold(c.Request().Context(), e, change.To)
	}
	return s.answerChannel(c, name, "unpinned")
}

// versionWrite reads a version write's source and version from the path
// (a 400 naming the bad one) and its reason from the body.
func (s *API) versionWrite(c echo.Context) (source string, vv resolver.VersionView, reason string, err error) {
	v, err := s.View()
	if err != nil {
		return "", vv, "", err
	}
	source = core.PathParam(c, "source")
	if vv, err = v.Snap.Version(source, core.PathParam(c, "version")); err != nil {
		if _, serr := v.Snap.SourceInfo(source); serr != nil {
			return "", vv, "", core.BadParam("source", serr)
		}
		return "", vv, "", core.BadParam("version", err)
	}
	reason, err = core.ReasonOf(c)
	return source, vv, reason, err
}

func (s *API) block(c echo.Context) error   { return s.setBlock(c, true) }
func (s *API) unblock(c echo.Context) error { return s.setBlock(c, false) }

// setBlock blocks or unblocks a version given as canonical string or tag;
// the block is recorded on the canonical version, so it covers every tag
// that spells it.
func (s *API) setBlock(c echo.Context, block bool) error {
	source, vv, reason, err := s.versionWrite(c)
	if err != nil {
		return err
	}
	d := map[bool]door.Door{true: door.Block, false: door.Unblock}[block]
	verdict := door.Decide(door.Change{Door: d}, core.Principal(c), door.Governance{}, time.Now())
	s.Metrics.Decision(d, verdict)
	if verdict.Outcome == door.Refuse {
		return verdict.Err
	}
	ctx := c.Request().Context()
	canonical := vv.Version.String()
	if block {
		_, err = s.Opts.Store.Block(ctx, source, canonical, core.Actor(c), reason)
	} else {
		err = s.Opts.Store.Unblock(ctx, source, canonical, core.Actor(c), reason)
	}
	if err != nil {
		return fmt.Errorf("block %s of %q: %w", canonical, source, err)
	}
	if err := s.reloadAfterWrite(ctx, snapshot.Change{Source: source}); err != nil {
		return fmt.Errorf("%w: %s of %q changed, but this replica could not reload it yet: %w", resolver.ErrUnavailable, canonical, source, err)
	}
	v, err := s.View()
	if err != nil {
		return err
	}
	after, err := v.Snap.Version(source, canonical)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, core.VersionJSON(after))
}

// answerChannel reloads the snapshot after a committed write so that the
// answer, and every read after it on this replica, shows the change.
func (s *API) answerChannel(c echo.Context, name, done string) error {
	if err := s.reloadAfterWrite(c.Request().Context(), snapshot.Change{Channel: name}); err != nil {
		// The write is committed; saying 503 without saying so would invite
		// a blind retry.
		return fmt.Errorf("%w: channel %q %s, but this replica could not reload it yet: %w", resolver.ErrUnavailable, name, done, err)
	}
	v, err := s.View()
	if err != nil {
		return err
	}
	e, err := v.Channel(name)
	if err != nil {
		return err
	}
	body, etag := e.ChannelAt(time.Now())
	c.Response().Header().Set("ETag", etag)
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, body)
}

// reloadAfterWrite reloads once a write has committed. The reload is the
// replica's business, not the request's: a client hanging up after its
// write committed must not fail it (a degraded replica, an alert). It holds
// reloadMu, so it is bounded: a hung database must not stall every reload.
func (s *API) reloadAfterWrite(ctx context.Context, c snapshot.Change) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), WriteReloadTimeout)
	defer cancel()
	var cs snapshot.Changes
	cs.Add(c)
	return s.Update(ctx, cs)
}

func (s *API) scan(c echo.Context) error {
	if err := core.IgnoreBody(c); err != nil {
		return err
	}
	source, err := s.SourceParam(c)
	if err != nil {
		return err
	}
	if s.Opts.Scan == nil {
		return fmt.Errorf("%w: this replica does not index (serve --no-index, or another replica holds the indexer lock); ask the indexing replica", resolver.ErrUnavailable)
	}
	// The scan outlives this request by design.
	running, err := s.Opts.Scan(context.WithoutCancel(c.Request().Context()), source)
	if err != nil {
		return core.ParamIf("source", resolver.ErrNotFound, fmt.Errorf("scan %q: %w", source, err))
	}
	status := "started"
	if running {
		status = "running"
	}
	return c.JSON(http.StatusAccepted, openapi.ScanStarted{Source: source, Status: status})
}

// history reads the audit log from the database rather than the snapshot:
// it is evidence, and a person asking for it wants the latest word.
func (s *API) history(c echo.Context) error {
	if s.Opts.Store == nil {
		return s.WriteUnavailable(c)
	}
	_, e, err := s.ChannelParam(c)
	if err != nil {
		return err
	}
	out, err := s.ChannelHistory(c.Request().Context(), e)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, out)
}

// checkGatesNow runs the release gates of source's version and reloads the
// source, returning the view that includes the result.
func (s *API) checkGatesNow(ctx context.Context, source, version string) (*core.View, error) {
	v, err := s.View()
	if err != nil {
		return nil, err
	}
	vv, err := v.Snap.Version(source, version)
	if err != nil {
		return nil, err
	}
	gctx, cancel := context.WithTimeout(ctx, WriteReloadTimeout)
	defer cancel()
	if err := s.Opts.Gate(gctx, source, vv.Tag.Name); err != nil {
		return nil, fmt.Errorf("%w: pin: the release gates of %s could not be checked now: %w", resolver.ErrUnavailable, vv.Version, err)
	}
	if err := s.reloadAfterWrite(ctx, snapshot.Change{Source: source}); err != nil {
		return nil, err
	}
	return s.View()
}

// holdStore lifts evidence holds (*store.Store).
type holdStore interface {
	LiftHold(ctx context.Context, source, version, actor, reason string) error
}

// liftHold is DELETE .../versions/{version}/hold: an admin lifts a yank's
// hold, so promotions may take the version again.
func (s *API) liftHold(c echo.Context) error {
	source, vv, reason, err := s.versionWrite(c)
	if err != nil {
		return err
	}
	hs, ok := s.Opts.Store.(holdStore)
	if !ok {
		return s.WriteUnavailable(c)
	}
	if err := hs.LiftHold(c.Request().Context(), source, vv.Version.String(), core.Actor(c), reason); err != nil {
		return core.BadParam("version", err)
	}
	return c.JSON(http.StatusOK, core.VersionJSON(vv))
}

// channelWrite is what a pin and an unpin start from: the view, the
// channel the path names and the revision If-Match asks for
// (resolver.AnyRevision without one).
func (s *API) channelWrite(c echo.Context) (*core.View, *core.Entry, int64, error) {
	v, e, err := s.ChannelParam(c)
	if err != nil {
		return nil, nil, 0, err
	}
	ifRev, err := core.IfMatchRevision(c.Request())
	return v, e, ifRev, err
}
