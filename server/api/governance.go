package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/internal/governor"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/door"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server/core"
)

// maxChangesListed bounds GET /api/v1/changes.
const maxChangesListed = 500

func (s *API) registerGovernance(e *echo.Echo) {
	promote := s.RequireChannelScope(core.ScopePromote)
	e.POST("/api/v1/channels/:name/changes", s.scheduleChange, s.DBDeadline, promote)
	// Read like a channel's history: no token.
	s.Get(e, "/api/v1/changes", s.listChanges, s.DBDeadline)
	// The change's channel is checked by the handler (changeOf): a person
	// or token limited to channels decides the changes of those.
	byChange := s.Authorize(core.ScopePromote, true, core.ReachHandler)
	e.DELETE("/api/v1/changes/:id", s.cancelChange, s.DBDeadline, byChange)
	e.POST("/api/v1/changes/:id/approve", s.approveChange, s.DBDeadline, byChange)
	e.POST("/api/v1/changes/:id/reject", s.rejectChange, s.DBDeadline, byChange)
	e.POST("/api/v1/freezes", s.createFreeze, s.DBDeadline, s.RequireScope(core.ScopeAdmin))
	s.Get(e, "/api/v1/freezes", s.listFreezes, s.DBDeadline)
	e.DELETE("/api/v1/freezes/:id", s.cancelFreeze, s.DBDeadline, s.RequireScope(core.ScopeAdmin))
}

// scheduleChange is POST /api/v1/channels/{name}/changes.
func (s *API) scheduleChange(c echo.Context) error {
	v, e, err := s.ChannelParam(c)
	if err != nil {
		return err
	}
	var req openapi.ChangeRequest
	if err := core.DecodeBody(c, &req, true); err != nil {
		return err
	}
	at, err := time.Parse(time.RFC3339, req.At)
	switch {
	case req.At == "":
		return core.InvalidParam("at", "at is required (RFC 3339, e.g. 2026-12-01T06:00:00Z)")
	case err != nil:
		return core.InvalidParam("at", "%q is not an RFC 3339 time like 2026-12-01T06:00:00Z", req.At)
	case !at.After(time.Now()):
		return core.InvalidParam("at", "%s is not in the future", req.At)
	}
	sc := resolver.ScheduledChange{Channel: e.Ans.Channel.Name, Action: req.Action, Reason: req.Reason, At: at,
		Force: req.Force, Rollback: req.Rollback}
	if err := s.checkChange(v, &sc, req.Version); err != nil {
		return err
	}
	verdict, err := s.decideDoor(c, door.Change{Door: door.Schedule, Channel: sc.Channel, Target: sc.Version,
		TargetLine: v.Snap.TargetLine(sc.Channel, sc.Version), AllowExpired: req.AllowExpired}, e)
	if err != nil {
		return err
	}
	sc.Reason = withAllowExpired(sc.Reason, verdict)
	return s.recordChange(c, e, sc)
}

// checkChange validates a change's action and version against the
// snapshot now (it is checked again when it applies).
func (s *API) checkChange(v *core.View, sc *resolver.ScheduledChange, version string) error {
	switch sc.Action {
	case "pin":
		if version == "" {
			return core.InvalidParam("version", "version is required to pin")
		}
		cc, err := v.Snap.PlanPin(sc.Channel, version, sc.Force)
		if err != nil && !errors.Is(err, snapshot.ErrGatesPending) {
			return core.BadParam("version", err)
		}
		sc.Version = cc.Version
		if sc.Version == "" {
			sc.Version = version
		}
	case "unpin":
		if version != "" {
			return core.InvalidParam("version", "an unpin takes no version")
		}
	default:
		return core.InvalidParam("action", "action %q is neither pin nor unpin", sc.Action)
	}
	return nil
}

// recordChange stores sc for the requester: pending when the channel
// needs approvals (202), else scheduled (201).
func (s *API) recordChange(c echo.Context, e *core.Entry, sc resolver.ScheduledChange) error {
	g, err := s.GovernanceStore()
	if err != nil {
		return err
	}
	sc.RequestedBy, sc.RequesterIdentity, sc.State = core.Actor(c), core.Principal(c).ID(), resolver.ChangeScheduled
	status := http.StatusCreated
	if n := e.Ans.Channel.Approvals; n > 0 {
		ttl := e.Ans.Channel.ApprovalTTL
		if ttl <= 0 {
			ttl = config.DefaultApprovalTTL
		}
		sc.State, sc.ApprovalsNeeded, sc.ExpiresAt = resolver.ChangePending, n, time.Now().Add(ttl)
		status = http.StatusAccepted
	}
	sc, err = g.ScheduleChange(c.Request().Context(), sc)
	if err != nil {
		return fmt.Errorf("change of channel %q: %w", sc.Channel, err)
	}
	s.Metrics.Governance("requested")
	return c.JSON(status, core.ChangeJSON(sc))
}

func (s *API) listChanges(c echo.Context) error {
	g, err := s.GovernanceStore()
	if err != nil {
		return err
	}
	state := c.QueryParam("state")
	if state != "" && !slices.Contains(resolver.ChangeStates, state) {
		return core.InvalidParam("state", "state %q is not one of %s", state, strings.Join(resolver.ChangeStates, ", "))
	}
	cs, err := g.Changes(c.Request().Context(), state, maxChangesListed)
	if err != nil {
		return err
	}
	out := openapi.ChangeList{Changes: make([]openapi.Change, len(cs))}
	for i, ch := range cs {
		out.Changes[i] = core.ChangeJSON(ch)
	}
	return c.JSON(http.StatusOK, out)
}

func changeID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, core.InvalidParam("id", "%q is not a change id", c.Param("id"))
	}
	return id, nil
}

// changeOf finds change id and checks the principal may write its channel.
func (s *API) changeOf(c echo.Context, g core.Governance, id int64) (resolver.ScheduledChange, error) {
	ch, err := g.Change(c.Request().Context(), id)
	if err != nil {
		return ch, core.BadParam("id", err)
	}
	return ch, core.MayReach(core.Principal(c), core.ReachChannel, ch.Channel)
}

// changeRequest reads a request about change {id}: the store, the id
// (checked against the principal's channels) and the reason.
func (s *API) changeRequest(c echo.Context) (g core.Governance, id int64, reason string, err error) {
	if g, err = s.GovernanceStore(); err != nil {
		return nil, 0, "", err
	}
	if id, err = changeID(c); err != nil {
		return nil, 0, "", err
	}
	if _, err = s.changeOf(c, g, id); err != nil {
		return nil, 0, "", err
	}
	reason, err = core.ReasonOf(c)
	return g, id, reason, err
}

func (s *API) cancelChange(c echo.Context) error {
	g, id, reason, err := s.changeRequest(c)
	if err != nil {
		return err
	}
	ch, err := g.CancelChange(c.Request().Context(), id, core.Actor(c), reason)
	if err != nil {
		return core.BadParam("id", err)
	}
	s.Metrics.Governance("cancelled")
	return c.JSON(http.StatusOK, core.ChangeJSON(ch))
}

func (s *API) approveChange(c echo.Context) error { return s.decideChange(c, true) }
func (s *API) rejectChange(c echo.Context) error  { return s.decideChange(c, false) }

// decideChange approves or rejects a pending change; the last approval
// needed applies a change whose time has come at once (through the one
// decision: a freeze or a closed window it did not override holds its
// answer; one it overrode does not).
func (s *API) decideChange(c echo.Context, approve bool) error {
	g, id, reason, err := s.changeRequest(c)
	if err != nil {
		return err
	}
	p := core.Principal(c)
	if s.Opts.SignIn != nil && !p.Person {
		return fmt.Errorf("%w: %s is a Tidemark token; with sign-in configured only signed-in people approve or reject changes", resolver.ErrScope, p.Name)
	}
	ctx := c.Request().Context()
	ch, err := g.DecideChange(ctx, id, p, approve, reason)
	if err != nil {
		return core.BadParam("id", err)
	}
	if ch.State == resolver.ChangeScheduled && !ch.At.After(time.Now()) {
		if applied, ok := s.applyApproved(ctx, g, ch); ok {
			ch = applied
		}
	}
	s.Metrics.Governance(map[bool]string{true: "approved", false: "rejected"}[approve])
	return c.JSON(http.StatusOK, core.ChangeJSON(ch))
}

// applyApproved applies an approved, due change now, as the governor
// would a second later; ok false leaves it to the governor.
func (s *API) applyApproved(ctx context.Context, g core.Governance, ch resolver.ScheduledChange) (resolver.ScheduledChange, bool) {
	v, err := s.View()
	if err != nil {
		return ch, false
	}
	e := v.Entry(ch.Channel)
	if e == nil {
		return ch, false
	}
	applied, ok, err := g.ApplyChange(ctx, ch.ID, func(sc resolver.ScheduledChange) (resolver.ChannelChange, error) {
		return governor.Plan(v.Snap, sc)
	})
	if err != nil {
		// Scheduled and due: the governor applies it within a second.
		s.Log.Warn("could not apply an approved change now; the leader will", "change", ch.ID, "err", err)
		return ch, false
	}
	if !ok {
		return ch, false
	}
	if applied.Override && applied.State == resolver.ChangeDone {
		// Approved with an admin's override: a freeze or a closed window
		// it overrode does not hold it.
		s.moveHold(ctx, e, applied.Version)
	}
	if err := s.reloadAfterWrite(ctx, snapshot.Change{Channel: applied.Channel}); err != nil {
		s.Log.Warn("applied an approved change; reload failed", "change", ch.ID, "err", err)
	}
	return applied, true
}

// maxFreezeChannels bounds a freeze's channel globs.
const maxFreezeChannels = 100

func (s *API) createFreeze(c echo.Context) error {
	g, err := s.GovernanceStore()
	if err != nil {
		return err
	}
	var req openapi.FreezeRequest
	if err := core.DecodeBody(c, &req, true); err != nil {
		return err
	}
	f := resolver.Freeze{Channels: req.Channels, Reason: req.Reason, CreatedBy: core.Actor(c)}
	switch {
	case len(req.Channels) == 0:
		return core.InvalidParam("channels", "channels is required: names or globs (\"v1.*\", \"*\")")
	case len(req.Channels) > maxFreezeChannels:
		return core.InvalidParam("channels", "%d entries, at most %d", len(req.Channels), maxFreezeChannels)
	case strings.TrimSpace(req.Reason) == "":
		return core.InvalidParam("reason", "a freeze needs a reason: it is what a refused pin says")
	}
	for i, g := range req.Channels {
		if !resolver.ValidChannelGlob(g) {
			return core.InvalidParam(fmt.Sprintf("channels[%d]", i), "%q is not a channel name or glob", g)
		}
	}
	if f.From, err = time.Parse(time.RFC3339, req.From); err != nil {
		return core.InvalidParam("from", "%q is not an RFC 3339 time like 2026-12-20T00:00:00Z", req.From)
	}
	if f.Until, err = time.Parse(time.RFC3339, req.Until); err != nil {
		return core.InvalidParam("until", "%q is not an RFC 3339 time like 2027-01-04T00:00:00Z", req.Until)
	}
	switch {
	case !f.Until.After(f.From):
		return core.InvalidParam("until", "until %s is not after from %s", req.Until, req.From)
	case !f.Until.After(time.Now()):
		return core.InvalidParam("until", "until %s has passed", req.Until)
	}
	if f, err = g.CreateFreeze(c.Request().Context(), f); err != nil {
		return err
	}
	s.Metrics.Governance("freeze")
	s.kickGovernor()
	return c.JSON(http.StatusCreated, core.FreezeJSON(f, time.Now()))
}

func (s *API) listFreezes(c echo.Context) error {
	g, err := s.GovernanceStore()
	if err != nil {
		return err
	}
	now := time.Now()
	fs, err := g.Freezes(c.Request().Context(), now)
	if err != nil {
		return err
	}
	out := openapi.FreezeList{Freezes: make([]openapi.Freeze, len(fs))}
	for i, f := range fs {
		out.Freezes[i] = core.FreezeJSON(f, now)
	}
	return c.JSON(http.StatusOK, out)
}

func (s *API) cancelFreeze(c echo.Context) error {
	if err := core.IgnoreBody(c); err != nil {
		return err
	}
	g, err := s.GovernanceStore()
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return core.InvalidParam("id", "%q is not a freeze id", c.Param("id"))
	}
	f, err := g.CancelFreeze(c.Request().Context(), id, core.Actor(c))
	if err != nil {
		return core.BadParam("id", err)
	}
	s.kickGovernor()
	return c.JSON(http.StatusOK, core.FreezeJSON(f, time.Now()))
}

// frozen is the freeze holding channel now, if any.
func (s *API) frozen(ctx context.Context, channel string) (*resolver.Freeze, error) {
	if s.Opts.Governance == nil {
		return nil, nil
	}
	now := time.Now()
	fs, err := s.Opts.Governance.Freezes(ctx, now)
	if err != nil {
		return nil, err
	}
	for i := range fs {
		if fs[i].Covers(channel, now) {
			return &fs[i], nil
		}
	}
	return nil, nil
}

// kickGovernor runs a governance round soon (a freeze made or lifted).
func (s *API) kickGovernor() {
	select {
	case s.GovernKick <- struct{}{}:
	default:
	}
}
