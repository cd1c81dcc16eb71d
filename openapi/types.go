package openapi

import "time"

// The wire types of the API: the Go shape of each schema in openapi.yaml
// (components/schemas/<Name> for type <Name>). The server encodes them and
// the CLI decodes them, so both speak one contract; TestTypesMatchSchemas
// keeps each field list equal to its schema's properties.

// Channel is the channel object of /api/v1/channels and of a channel URL
// asked with Accept: application/json. Version, Tag and Digest are null when
// nothing is eligible; Constraint is null when the channel has none.
type Channel struct {
	Name       string     `json:"name"`
	Source     string     `json:"source"`
	Stream     string     `json:"stream"`
	Constraint *string    `json:"constraint"`
	Pinned     bool       `json:"pinned"`
	Version    *string    `json:"version"`
	Tag        *string    `json:"tag"`
	Digest     *string    `json:"digest"`
	UpdatedAt  *time.Time `json:"updated_at"`
	// Rollout is the channel's staged rollout; nil when it never rolled out.
	Rollout *Rollout `json:"rollout"`
	// RollsOut is the channel's rollout policy; nil without one.
	RollsOut *RolloutPolicy `json:"rolls_out,omitempty"`
	// Held says why this answer is not the channel's version for the
	// cluster that asked (a channel URL with its headers); absent otherwise.
	Held *Held `json:"held,omitempty"`
	// TUF names the channel's signed answer, with signed answers
	// configured: its target and the revision published last.
	TUF *ChannelTUF `json:"tuf,omitempty"`
	// Promotion is present on a channel with promote: what it promotes
	// from, and whether a person's or a token's pin pauses it.
	Promotion *ChannelPromotion `json:"promotion,omitempty"`
	// Running is the asking cluster's version when its line is deprecated
	// or expired (a channel URL with its headers); absent otherwise.
	Running *Running `json:"running,omitempty"`
	// Lifecycle is present when the channel's version is on a deprecated
	// or expired line.
	Lifecycle *ChannelLifecycle `json:"lifecycle,omitempty"`
}

// ChannelPromotion is a promoting channel's state (docs/promotion.md).
type ChannelPromotion struct {
	From   string `json:"from"`
	Paused bool   `json:"paused"`
	// Waiting says why it does not move now (null when it answers what
	// its from channel answers, or every condition holds).
	Waiting *string `json:"waiting"`
}

// ChannelTUF is a channel's signed answer (docs/tuf.md).
type ChannelTUF struct {
	Target   string `json:"target"`
	Revision int64  `json:"revision"`
}

// Held is why an answer holds a cluster where it is: on a channel URL's
// answer to a cluster, "downgrade" or "risk"; on the channel object,
// "window" or a freeze's reason, with Until (the next window's start or
// the freeze's end).
type Held struct {
	Reason string     `json:"reason"`
	Until  *time.Time `json:"until,omitempty"`
	// Blocked (with reason downgrade): the version the cluster runs is
	// blocked, and no servable version above it is one its channel allows.
	Blocked bool `json:"blocked,omitempty"`
}

// RolloutPolicy is how a channel rolls out each new version.
type RolloutPolicy struct {
	Steps           []int `json:"steps"`
	IntervalSeconds int64 `json:"interval_seconds"`
}

// Rollout is a channel's staged rollout (GET /api/v1/channels/{name}/rollout).
type Rollout struct {
	Channel    string     `json:"channel"`
	From       string     `json:"from"`
	To         string     `json:"to"`
	State      string     `json:"state"`
	Percent    int        `json:"percent"`
	Step       int        `json:"step"`
	Steps      []int      `json:"steps"`
	StartedAt  time.Time  `json:"started_at"`
	NextStepAt *time.Time `json:"next_step_at"`
	// Clusters counts the fleet's clusters last served to and from. The
	// channel object, answered without the database, has the last counts
	// taken off the request path: nil until the first.
	Clusters *RolloutClusters `json:"clusters"`
}

// RolloutClusters counts clusters by the version they were last served.
type RolloutClusters struct {
	To   int `json:"to"`
	From int `json:"from"`
}

// AlertmanagerPayload is Alertmanager's webhook body, version 4.
type AlertmanagerPayload struct {
	Version           string              `json:"version"`
	GroupKey          string              `json:"groupKey,omitempty"`
	TruncatedAlerts   int                 `json:"truncatedAlerts,omitempty"`
	Status            string              `json:"status,omitempty"`
	Receiver          string              `json:"receiver,omitempty"`
	GroupLabels       map[string]string   `json:"groupLabels,omitempty"`
	CommonLabels      map[string]string   `json:"commonLabels,omitempty"`
	CommonAnnotations map[string]string   `json:"commonAnnotations,omitempty"`
	ExternalURL       string              `json:"externalURL,omitempty"`
	Alerts            []AlertmanagerAlert `json:"alerts"`
}

// AlertmanagerAlert is one alert of an Alertmanager webhook.
type AlertmanagerAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     *time.Time        `json:"startsAt,omitempty"`
	EndsAt       *time.Time        `json:"endsAt,omitempty"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
	Fingerprint  string            `json:"fingerprint,omitempty"`
}

// AlertsResult is what POST /api/v1/alerts/alertmanager did.
type AlertsResult struct {
	// Halted lists the channels whose rollout the alerts halted.
	Halted []string `json:"halted"`
	// Ignored lists firing alerts that halted nothing, with why.
	Ignored []IgnoredAlert `json:"ignored"`
}

// IgnoredAlert is one firing alert that halted nothing.
type IgnoredAlert struct {
	Alertname string `json:"alertname"`
	Channel   string `json:"channel"`
	Reason    string `json:"reason"`
}

// ReleaseCollection is channelserver's (rancher/apiserver) collection.
type ReleaseCollection struct {
	Type         string            `json:"type"`
	Links        map[string]string `json:"links"`
	Actions      struct{}          `json:"actions"`
	ResourceType string            `json:"resourceType"`
	Data         []ReleaseChannel  `json:"data"`
}

// ReleaseError is channelserver's (rancher/apiserver) error body, plus an
// RFC 9457 problem's title and detail ("error" is a valid problem type, a
// relative URI reference), so that one body reads as either.
type ReleaseError struct {
	Type    string   `json:"type"`
	Links   struct{} `json:"links"`
	Code    string   `json:"code"`
	Message string   `json:"message"`
	Status  int      `json:"status"`
	Title   string   `json:"title"`
	Detail  string   `json:"detail"`
}

// ReleaseChannel is one channelserver channel. Latest is the resolved
// version (omitted when nothing is eligible, as channelserver does).
type ReleaseChannel struct {
	ID            string            `json:"id"`
	Type          string            `json:"type"`
	Links         map[string]string `json:"links"`
	Name          string            `json:"name"`
	Latest        string            `json:"latest,omitempty"`
	LatestRegexp  string            `json:"latestRegexp,omitempty"`
	ExcludeRegexp string            `json:"excludeRegexp,omitempty"`
}

// Version is one indexed version of a source.
type Version struct {
	Tag       string  `json:"tag"`
	Version   string  `json:"version"`
	Major     int     `json:"major"`
	Minor     int     `json:"minor"`
	Patch     int     `json:"patch"`
	Pre       string  `json:"pre"`
	PreNumber int     `json:"pre_number"`
	Build     int     `json:"build"`
	Stream    string  `json:"stream"`
	Digest    *string `json:"digest"`
	Blocked   bool    `json:"blocked"`
	// Servable is false while the version is blocked or a release gate
	// holds it: no channel serves it and no resolve answer offers it.
	Servable bool `json:"servable"`
	// DevBuild: a juju development build (M.m.p.b); channels skip it
	// unless they set builds: true.
	DevBuild bool `json:"dev_build,omitempty"`
	// Gates is the state per gate of the source's; null without gates.
	Gates *Gates `json:"gates"`
	// PreviousDigest is set when the tag was re-pointed to another image.
	PreviousDigest *string `json:"previous_digest,omitempty"`
	// Held is {"reason":"evidence"} while a yank holds the version: no
	// promotion takes it until an admin lifts the hold.
	Held *Held `json:"held,omitempty"`
	// Lifecycle is the version's line and its classification; null when
	// the version is no line's (not indexed).
	Lifecycle *VersionLifecycle `json:"lifecycle,omitempty"`
}

// Gates is a version's state per release gate; a gate the source does not
// have is left out.
type Gates struct {
	Platforms string `json:"platforms,omitempty"` // "ok" | "missing linux/arm64"
	Signature string `json:"signature,omitempty"` // "ok" | "missing" | "invalid"
	Soak      string `json:"soak,omitempty"`      // "ok" | "until 2026-11-23T05:34:23Z"
}

// Source is a source's indexing status.
type Source struct {
	Name        string         `json:"name"`
	Image       string         `json:"image"`
	Scheme      string         `json:"scheme"`
	LastScan    *Scan          `json:"last_scan"`
	LastSuccess *Scan          `json:"last_success"`
	Tags        int            `json:"tags"`
	Unparsed    int            `json:"unparsed"`
	Versions    map[string]int `json:"versions"` // per stream, all four present
}

// Scan is one indexing run.
type Scan struct {
	Started  time.Time  `json:"started"`
	Finished *time.Time `json:"finished"`
	Outcome  string     `json:"outcome"`
	Error    *string    `json:"error"`
	Complete bool       `json:"complete"`
	TagsSeen int        `json:"tags_seen"`
	TagsNew  int        `json:"tags_new"`
	TagsGone int        `json:"tags_gone"`
}

// Unparsed is a tag that is not a version under its source's scheme.
type Unparsed struct {
	Tag       string    `json:"tag"`
	Error     string    `json:"error"`
	Digest    *string   `json:"digest"`
	FirstSeen time.Time `json:"first_seen"`
}

// ResolveAnswer is the dry-run upgrade answer. Versions are canonical
// strings throughout, which is what an upgrade client compares and prints;
// TargetTag is the registry tag to pull for Target.
type ResolveAnswer struct {
	Source    string   `json:"source"`
	Current   string   `json:"current"`
	Stream    string   `json:"stream"`
	Channel   *string  `json:"channel"`
	Available []string `json:"available"`
	Target    *string  `json:"target"`
	TargetTag *string  `json:"target_tag"`
	Path      []string `json:"path"`
	Reason    string   `json:"reason"`
	// Risks are the known risks on the edges from current to available
	// versions; target and path avoid those not accepted.
	Risks []ResolveRisk `json:"risks"`
	// Warning is what a cluster running current is told when its line is
	// deprecated or expired (the channel URL's Warning header, without its
	// 299 tidemark prefix); absent otherwise.
	Warning *string `json:"warning,omitempty"`
}

// PinRequest is the body of PUT .../pin.
type PinRequest struct {
	Version string `json:"version"`
	Reason  string `json:"reason,omitempty"`
	Force   bool   `json:"force,omitempty"`
	// Rollback: clusters running a newer version are sent down to this one
	// (a pin without it never moves a cluster down); audited as rollback.
	Rollback bool `json:"rollback,omitempty"`
	// OverrideFreeze (admin only) pins a frozen channel, at once.
	OverrideFreeze bool `json:"override_freeze,omitempty"`
	// AllowExpired (admin only) pins a version whose line has expired.
	AllowExpired bool `json:"allow_expired,omitempty"`
}

// ReasonRequest is the (optional) body of unpin, block and unblock.
type ReasonRequest struct {
	Reason string `json:"reason,omitempty"`
}

// ScanStarted is the answer to POST .../scan.
type ScanStarted struct {
	Source string `json:"source"`
	Status string `json:"status"` // started | running
}

// AuditEvent is one entry of a channel's history.
type AuditEvent struct {
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Action string    `json:"action"`
	From   *string   `json:"from"`
	To     *string   `json:"to"`
	Reason string    `json:"reason"`
}

// Problem is an RFC 9457 problem details body.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Param names the query or path parameter that was wrong.
	Param string `json:"param,omitempty"`
}

// Root is the API root (GET /, /v1-release, /api/v1): where to go from
// here, as absolute links.
type Root struct {
	Links map[string]string `json:"links"`
}

// WebhookResult answers a registry webhook (202): how many tags the payload
// named, how many were queued for indexing, and how many were ignored (a
// repository no source indexes).
type WebhookResult struct {
	Tags    int `json:"tags"`
	Queued  int `json:"queued"`
	Ignored int `json:"ignored"`
}

// TimeOrNil is t as a nullable wire time: nil when zero, else in UTC.
func TimeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// RolloutControlRequest is the (optional) body of a rollout control.
type RolloutControlRequest struct {
	Reason string `json:"reason,omitempty"`
	// Rollback (halt only): clusters already on the rollout's version are
	// sent back to its from too; a plain halt keeps them where they are.
	Rollback bool `json:"rollback,omitempty"`
	// OverrideFreeze (advance and resume, admins only) proceeds though
	// the channel is frozen or outside its windows.
	OverrideFreeze bool `json:"override_freeze,omitempty"`
}

// ChannelReleases is Renovate's custom datasource format
// (GET /api/v1/channels/{name}/releases).
type ChannelReleases struct {
	Releases  []ChannelRelease `json:"releases"`
	SourceURL string           `json:"sourceUrl,omitempty"`
}

// ChannelRelease is one version a channel may serve.
type ChannelRelease struct {
	Version          string     `json:"version"` // the registry tag
	ReleaseTimestamp *time.Time `json:"releaseTimestamp,omitempty"`
	Digest           string     `json:"digest,omitempty"`
	// IsDeprecated marks a release of an expired line: Renovate (with
	// ignoreDeprecated, its default) moves nobody onto it.
	IsDeprecated bool `json:"isDeprecated,omitempty"`
}

// CincinnatiGraph is GET /api/upgrades_info/v1/graph: the OpenShift Update
// Service's graph format, as the cluster-version-operator reads it.
type CincinnatiGraph struct {
	Version          int                          `json:"version"`
	Nodes            []CincinnatiNode             `json:"nodes"`
	Edges            [][2]int                     `json:"edges"`
	ConditionalEdges []CincinnatiConditionalEdges `json:"conditionalEdges"`
}

// CincinnatiNode is one release: its semver version and its payload image.
type CincinnatiNode struct {
	Version  string            `json:"version"`
	Payload  string            `json:"payload"`
	Metadata map[string]string `json:"metadata"`
}

// CincinnatiConditionalEdges are edges that the same risks cover.
type CincinnatiConditionalEdges struct {
	Edges []CincinnatiEdge `json:"edges"`
	Risks []CincinnatiRisk `json:"risks"`
}

// CincinnatiEdge is an edge by node versions.
type CincinnatiEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// CincinnatiRisk is a known risk as the cluster-version-operator reads it.
type CincinnatiRisk struct {
	URL           string                   `json:"url"`
	Name          string                   `json:"name"`
	Message       string                   `json:"message"`
	MatchingRules []CincinnatiMatchingRule `json:"matchingRules"`
}

// CincinnatiMatchingRule says which clusters a risk applies to: Tidemark
// evaluates cluster IDs itself, so a risk it lists applies ("Always").
type CincinnatiMatchingRule struct {
	Type string `json:"type"`
}
