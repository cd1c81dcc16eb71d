package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/server/core"
)

// The shapes the console's templates render. Rows embed the API's wire
// types, so a field the API grows is one a template can show. A row's
// rollout (openapi.Channel.Rollout) is shown where there is one, never as
// a placeholder (ui_rollout.go).

// uiPage is what the layout renders around a page's content.
type uiPage struct {
	Title    string
	Nav      string    // the navigation entry that is the current page
	Snapshot time.Time // when the data shown was loaded
	Body     any
	// SignIn: sign-in is configured; Who is the person signed in ("" for
	// nobody) and Scopes what they may do: the page offers only those
	// writes (render fills these).
	SignIn bool
	Who    string
	Scopes []string
}

// May reports whether the page should offer a write needing scope: with a
// person signed in, their scopes decide; otherwise a token typed in the
// page will (the server checks it either way).
func (p uiPage) May(scope string) bool {
	if p.Who == "" {
		return true
	}
	return core.Allows(p.Scopes, scope)
}

type uiChannelsBody struct {
	Fleet   bool // the server records a fleet: the rows have its counts
	Rows    []uiChannelRow
	Sources []openapi.Source
	ETag    string // of the rows, for the live poll
}

type uiChannelRow struct {
	openapi.Channel
	Why   string        // why nothing is served, when nothing is
	Fleet *uiFleetCount // nil when the server records no fleet
	// Fixed is the version the configuration's latest: fixes, when no
	// pin through the API overrides it: the row says "fixed", not
	// "pinned" beside "last pin: none".
	Fixed string
}

// channelRow is e's row: the channel object and why it serves nothing.
func channelRow(e *core.Entry) uiChannelRow {
	r := uiChannelRow{Channel: core.ChannelJSON(e), Why: e.Ans.Why}
	if e.Ans.State.Pin == "" && e.Ans.Channel.Latest != "" {
		r.Fixed = e.Ans.Channel.Latest
	}
	return r
}

type uiChannelBody struct {
	Row      uiChannelRow
	Include  string
	Exclude  string
	Latest   string // a version fixed by configuration
	ETag     string // If-Match for the pin form: a pin over a change made since is refused
	Eligible []string
	History  []openapi.AuditEvent
	// LastChange is the newest of the channel's pin state and its history
	// (a block of what it served is a change too); nil: never.
	LastChange *time.Time
	// HistoryProblem is why the history could not be read (no database).
	HistoryProblem *openapi.Problem
	Stepwise       bool
	Settle         string // "" when clusters need not settle
	Soak           string // the channel's own soak gate, "" for the source's
	Fleet          *uiFleetChart
	// FleetProblem is why the fleet could not be read; both nil when the
	// server records no fleet.
	FleetProblem *openapi.Problem
	// Evidence is what the fleet says of each version told; nil when the
	// server records no fleet.
	Evidence *uiEvidence
	// Rollout is the API's rollout of the channel, with the fleet's counts;
	// nil when it never rolled out. RolloutProblem is why the counts could
	// not be read (Rollout is then the channel object's, without them).
	Rollout        *openapi.Rollout
	RolloutProblem *openapi.Problem
	// Graph is the channel's update graph laid out; nil when it serves
	// nothing. Risks are its source's known risks.
	Graph *uiGraph
	Risks []openapi.Risk
	// ViewRepo is the channel as a registry repository (the registry
	// view), host and path, for crane, skopeo and docker pull.
	ViewRepo string
	// Governance is the channel's windows, hold and next scheduled change.
	Governance uiChannelGovernance
}

type uiSourceBody struct {
	Source   openapi.Source
	Stream   string // the stream filter, "" for all
	Streams  []uiStreamCount
	Versions []uiVersionRow
	Unparsed []openapi.Unparsed
	Channels []string // the channels that follow this source
	Gates    []string // the source's release gates, as a person reads them
	Risks    []openapi.Risk
	Timeline *uiTimeline // the source's lines; nil when it has none
}

type uiStreamCount struct {
	Name  string
	Count int
}

type uiVersionRow struct {
	openapi.Version
	BlockReason string
	Held        []uiGate // the gates that hold it, in the API's order; empty when none does
}

// uiGate is one release gate's state as the source page reads it:
// "platforms" "missing linux/arm64", "soak" "until 2026-...".
type uiGate struct {
	Name, State string
	Until       string // the soak's end, RFC 3339, for a <time> element
}

type uiResolveBody struct {
	Query    url.Values
	Sources  []string
	Channels []string
	Streams  []string
	Answer   *openapi.ResolveAnswer
	Problem  *openapi.Problem
}

// maxEligible bounds the pin form's suggestions; any version can be typed.
const maxEligible = 40

func (s *Console) uiChannels(c echo.Context) error {
	body, err := s.channelsBody(c.Request().Context())
	if err != nil {
		return s.uiError(c, err)
	}
	return s.render(c, http.StatusOK, "page_channels.html", uiPage{Title: "Channels", Nav: "channels", Body: body})
}

func (s *Console) channelsBody(ctx context.Context) (uiChannelsBody, error) {
	v, err := s.View()
	if err != nil {
		return uiChannelsBody{}, err
	}
	b := uiChannelsBody{Rows: s.channelRows(ctx, v), Fleet: s.Opts.Fleet.Store != nil}
	for _, sv := range v.Snap.Sources() {
		b.Sources = append(b.Sources, core.SourceJSON(sv))
	}
	rows, err := renderRows(b.Rows)
	if err != nil {
		return b, err
	}
	b.ETag = rowsETag(rows)
	return b, nil
}

// uiLiveChannels is the channel table's rows, polled by the channels page
// with If-None-Match: an unchanged table costs a 304 and no bytes. The ETag
// is of the rendered rows, so anything a row shows (a column added later
// too) moves it.
func (s *Console) uiLiveChannels(c echo.Context) error {
	v, err := s.View()
	if err != nil {
		return err // the poller reads problem+json
	}
	html, err := renderRows(s.channelRows(c.Request().Context(), v))
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("ETag", rowsETag(html))
	h.Set("Cache-Control", "no-cache")
	if core.ETagMatches(c.Request().Header.Get("If-None-Match"), h.Get("ETag")) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.HTMLBlob(http.StatusOK, html)
}

func renderRows(rows []uiChannelRow) ([]byte, error) {
	var buf bytes.Buffer
	if err := uiTemplates["rows.html"].ExecuteTemplate(&buf, "rows", rows); err != nil {
		return nil, fmt.Errorf("console: render channel rows: %w", err)
	}
	return buf.Bytes(), nil
}

func rowsETag(html []byte) string {
	h := fnv.New64a()
	h.Write(html)
	return fmt.Sprintf(`"rows-%x"`, h.Sum64())
}

func (s *Console) uiChannel(c echo.Context) error {
	v, e, err := s.ChannelParam(c)
	if err != nil {
		return s.uiError(c, err)
	}
	ch := e.Ans.Channel
	b := uiChannelBody{Row: channelRow(e), Latest: ch.Latest, ETag: e.ETagAt(time.Now())}
	if ch.Include != nil {
		b.Include = ch.Include.String()
	}
	if ch.Exclude != nil {
		b.Exclude = ch.Exclude.String()
	}
	b.Stepwise = ch.Stepwise
	if ch.Settle > 0 {
		b.Settle = config.ShortDuration(ch.Settle)
	}
	if ch.Soak != nil {
		b.Soak = config.ShortDuration(*ch.Soak)
	}
	b.Fleet, b.FleetProblem = s.channelFleet(c, v, e)
	b.Evidence = s.channelEvidence(c, v, e)
	b.Rollout, b.RolloutProblem = s.channelRolloutOf(c, e, b.Row.Channel)
	if vs, err := v.Snap.Versions(ch.Source, ch.Stream, ch.ConstraintText); err == nil {
		for _, vv := range slices.Backward(vs) {
			if len(b.Eligible) == maxEligible {
				break
			}
			if _, err := v.Snap.Eligible(ch.Name, vv.Version.String()); err == nil {
				b.Eligible = append(b.Eligible, vv.Version.String())
			}
		}
	}
	counts := map[string]int{}
	if b.Fleet != nil {
		for _, r := range b.Fleet.Rows {
			counts[r.Version] = r.Reported
		}
	}
	b.Graph = graphOf(v, ch.Name, str0(b.Row.Version), counts)
	b.Risks = uiRisks(v.Snap, ch.Source, core.BaseURL(s.Opts.ExternalURL, c.Request()))
	if u, err := url.Parse(core.BaseURL(s.Opts.ExternalURL, c.Request())); err == nil {
		b.ViewRepo = u.Host + "/channels/" + ch.Name
	}
	b.Governance = s.channelGovernance(c.Request().Context(), e)
	b.History, err = s.uiHistory(c.Request().Context(), e)
	if err != nil {
		// The channel is still worth showing without its history.
		b.HistoryProblem = problemOf(err)
	}
	b.LastChange = b.Row.UpdatedAt
	for _, h := range b.History {
		// What changed the answer: a change requested, approved or
		// cancelled, or a freeze, moved nothing.
		if strings.HasPrefix(h.Action, "change-") || strings.HasPrefix(h.Action, "freeze") {
			continue
		}
		if b.LastChange == nil || h.At.After(*b.LastChange) {
			at := h.At
			b.LastChange = &at
		}
		break
	}
	return s.render(c, http.StatusOK, "page_channel.html", uiPage{Title: "Channel " + ch.Name, Nav: "channels", Body: b})
}

func (s *Console) uiSource(c echo.Context) error {
	v, err := s.View()
	if err != nil {
		return s.uiError(c, err)
	}
	name := core.PathParam(c, "source")
	sv, err := v.Snap.SourceInfo(name)
	if err != nil {
		return s.uiError(c, core.ParamIf("source", resolver.ErrNotFound, err))
	}
	b := uiSourceBody{Source: core.SourceJSON(sv), Gates: gatesText(sv.Source.Gates), Risks: uiRisks(v.Snap, name, core.BaseURL(s.Opts.ExternalURL, c.Request())),
		Timeline: s.timeline(c.Request().Context(), v, name, time.Now())}
	stream := resolver.Testing // every version
	if q := c.QueryParam("stream"); q != "" {
		if stream, err = resolver.ParseStream(q); err != nil {
			return s.uiError(c, core.BadParam("stream", err))
		}
		b.Stream = stream.String()
	}
	for st := resolver.Released; st <= resolver.Testing; st++ {
		b.Streams = append(b.Streams, uiStreamCount{Name: st.String(), Count: sv.Streams[st]})
	}
	vs, err := v.Snap.Versions(name, stream, "")
	if err != nil {
		return s.uiError(c, err)
	}
	// Newest first: the top of the list is what channels are about.
	for _, vv := range slices.Backward(vs) {
		if b.Stream != "" && vv.Stream != stream {
			continue // by stream: each version under its own stream only
		}
		b.Versions = append(b.Versions, uiVersionRow{Version: core.VersionJSON(vv), BlockReason: vv.BlockReason(), Held: heldGates(vv.Gates)})
	}
	unparsed, err := v.Snap.Unparsed(name)
	if err != nil {
		return s.uiError(c, err)
	}
	for _, t := range unparsed {
		b.Unparsed = append(b.Unparsed, openapi.Unparsed{Tag: t.Name, Error: t.ParseError(), Digest: core.StrOrNil(t.Digest.String()), FirstSeen: t.FirstSeen.UTC()})
	}
	for _, e := range v.List {
		if e.Ans.Channel.Source == name {
			b.Channels = append(b.Channels, e.Ans.Channel.Name)
		}
	}
	return s.render(c, http.StatusOK, "page_source.html", uiPage{Title: "Source " + name, Nav: "channels", Body: b})
}

// uiResolve is the resolve form; with a query it also shows the API's
// answer to it, or the API's error next to the field it names.
func (s *Console) uiResolve(c echo.Context) error {
	v, err := s.View()
	if err != nil {
		return s.uiError(c, err)
	}
	q := c.QueryParams()
	b := uiResolveBody{Query: q}
	for _, sv := range v.Snap.Sources() {
		b.Sources = append(b.Sources, sv.Source.Name)
	}
	for _, e := range v.List {
		b.Channels = append(b.Channels, e.Ans.Channel.Name)
	}
	for st := resolver.Released; st <= resolver.Testing; st++ {
		b.Streams = append(b.Streams, st.String())
	}
	status := http.StatusOK
	if q.Get("current") != "" || q.Get("source") != "" || q.Get("channel") != "" {
		ans, err := core.ResolveQuery(v, q, core.BaseURL(s.Opts.ExternalURL, c.Request()))
		switch {
		case err == nil:
			b.Answer = &ans
		case errors.Is(err, resolver.ErrUnavailable):
			return s.uiError(c, err)
		default:
			// The form is the page: show it again with what was wrong.
			b.Problem = problemOf(err)
			status = b.Problem.Status
		}
	}
	return s.render(c, status, "page_resolve.html", uiPage{Title: "Resolve", Nav: "resolve", Body: b})
}

// uiHistory is the channel's history as GET .../history answers it, read
// with the same database deadline.
func (s *Console) uiHistory(ctx context.Context, e *core.Entry) ([]openapi.AuditEvent, error) {
	if s.Opts.Store == nil {
		return nil, fmt.Errorf("%w: GET /api/v1/channels/%s/history needs the database, which this server was started without", resolver.ErrUnavailable, e.Ans.Channel.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, s.Opts.DBTimeout)
	defer cancel()
	return s.ChannelHistory(ctx, e)
}
