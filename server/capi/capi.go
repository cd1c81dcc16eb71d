// Package capi answers Cluster API's runtime-extension hooks (CONTRACT
// section 13): GenerateUpgradePlan, for chained Kubernetes upgrades, with
// one handler per source configured with cluster_api: true, and the
// Discovery hook that lists them. An ExtensionConfig points at
// <external_url>/capi; Cluster API then POSTs to
// /capi/hooks.runtime.cluster.x-k8s.io/v1alpha1/<hook>/<handler>.
//
// Like channel URLs these take no token: a plan says only which versions
// exist and may be served, what the channel URLs say too. The decision is
// the domain's (snapshot.Snapshot.UpgradePlan); this package speaks the
// hook's JSON.
package capi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server/core"
)

// GroupVersion is the hooks' API group and version.
const GroupVersion = "hooks.runtime.cluster.x-k8s.io/v1alpha1"

// Prefix is where the hooks are served.
const Prefix = "/capi/" + GroupVersion

// MaxBody bounds a hook request: it carries the Cluster object, a few KiB.
const MaxBody = 1 << 20

// Hooks serves the hooks for Sources from the snapshot Snapshot returns
// (nil: not loaded yet, 503).
type Hooks struct {
	Sources  []string
	Snapshot func() *snapshot.Snapshot
	// Answered counts answers by source and status (Success, Failure).
	Answered func(source, status string)
}

// Register adds the hook routes to e.
func (h *Hooks) Register(e *echo.Echo) {
	e.POST(Prefix+"/discovery", h.discovery)
	e.POST(Prefix+"/generateupgradeplan/:source", h.generateUpgradePlan)
}

// DiscoveryResponse, ExtensionHandler, GroupVersionHook, UpgradePlanRequest
// and UpgradePlanResponse are the hooks' wire types as Cluster API defines
// them (sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1); the tests
// read and write them with Cluster API's own types.
type DiscoveryResponse struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Status     string             `json:"status"`
	Message    string             `json:"message,omitempty"`
	Handlers   []ExtensionHandler `json:"handlers"`
}

type ExtensionHandler struct {
	Name           string           `json:"name"`
	RequestHook    GroupVersionHook `json:"requestHook"`
	TimeoutSeconds int32            `json:"timeoutSeconds"`
	FailurePolicy  string           `json:"failurePolicy"`
}

type GroupVersionHook struct {
	APIVersion string `json:"apiVersion"`
	Hook       string `json:"hook"`
}

type UpgradePlanRequest struct {
	APIVersion                        string `json:"apiVersion"`
	Kind                              string `json:"kind"`
	FromControlPlaneKubernetesVersion string `json:"fromControlPlaneKubernetesVersion"`
	FromWorkersKubernetesVersion      string `json:"fromWorkersKubernetesVersion"`
	ToKubernetesVersion               string `json:"toKubernetesVersion"`
}

type UpgradePlanResponse struct {
	APIVersion           string        `json:"apiVersion"`
	Kind                 string        `json:"kind"`
	Status               string        `json:"status"`
	Message              string        `json:"message,omitempty"`
	ControlPlaneUpgrades []UpgradeStep `json:"controlPlaneUpgrades,omitempty"`
}

type UpgradeStep struct {
	Version string `json:"version"`
}

const (
	statusSuccess = "Success"
	statusFailure = "Failure"
)

func (h *Hooks) discovery(c echo.Context) error {
	if err := drain(c); err != nil {
		return err
	}
	out := DiscoveryResponse{APIVersion: GroupVersion, Kind: "DiscoveryResponse", Status: statusSuccess, Handlers: []ExtensionHandler{}}
	for _, s := range h.Sources {
		out.Handlers = append(out.Handlers, ExtensionHandler{
			Name:        s,
			RequestHook: GroupVersionHook{APIVersion: GroupVersion, Hook: "GenerateUpgradePlan"},
			// The answer comes from memory: a slow one means trouble, and
			// Cluster API must not upgrade on a guess.
			TimeoutSeconds: 10, FailurePolicy: "Fail",
		})
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Hooks) generateUpgradePlan(c echo.Context) error {
	source := c.Param("source")
	if !slices.Contains(h.Sources, source) {
		// Not counted: the name is the client's, the metric's labels are
		// configured sources.
		return c.JSON(http.StatusNotFound, UpgradePlanResponse{APIVersion: GroupVersion, Kind: "GenerateUpgradePlanResponse", Status: statusFailure,
			Message: fmt.Sprintf("no GenerateUpgradePlan handler %q (sources with cluster_api: true: %v)", source, h.Sources)})
	}
	var req UpgradePlanRequest
	if err := decode(c, &req); errors.Is(err, core.ErrBodyTooLarge) {
		return err // 413 naming the limit, as every route answers it
	} else if err != nil {
		return h.answer(c, source, UpgradePlanResponse{Status: statusFailure, Message: err.Error()}, http.StatusBadRequest)
	}
	switch {
	case req.FromControlPlaneKubernetesVersion == "":
		return h.answer(c, source, UpgradePlanResponse{Status: statusFailure, Message: "fromControlPlaneKubernetesVersion is required"}, http.StatusBadRequest)
	case req.ToKubernetesVersion == "":
		return h.answer(c, source, UpgradePlanResponse{Status: statusFailure, Message: "toKubernetesVersion is required"}, http.StatusBadRequest)
	}
	snap := h.Snapshot()
	if snap == nil {
		return fmt.Errorf("%w: no snapshot loaded yet", resolver.ErrUnavailable)
	}
	plan, err := snap.UpgradePlan(source, req.FromControlPlaneKubernetesVersion, req.ToKubernetesVersion)
	if err != nil {
		if !errors.Is(err, resolver.ErrUnprocessable) && !errors.Is(err, resolver.ErrInvalid) {
			return err
		}
		return h.answer(c, source, UpgradePlanResponse{Status: statusFailure, Message: err.Error()}, http.StatusOK)
	}
	if n := len(plan); n > 0 {
		// Never start a cluster on a line that has ended (the target is
		// the plan's last step).
		if l := snap.Lines().LineOf(source, plan[n-1].Version); l != nil && l.Class == lifecycle.Expired {
			return h.answer(c, source, UpgradePlanResponse{Status: statusFailure, Message: fmt.Sprintf("%s is expired: its line %s ended %s%s",
				plan[n-1].Version, l.Line, l.End.UTC().Format(time.DateOnly), successorHint(l.Successor))}, http.StatusOK)
		}
	}
	out := UpgradePlanResponse{Status: statusSuccess}
	for _, t := range plan {
		out.ControlPlaneUpgrades = append(out.ControlPlaneUpgrades, UpgradeStep{Version: t.Version.String()})
	}
	return h.answer(c, source, out, http.StatusOK)
}

// successorHint is "; move to <line>", or "" without a successor.
func successorHint(line string) string {
	if line == "" {
		return ""
	}
	return "; move to " + line
}

func (h *Hooks) answer(c echo.Context, source string, r UpgradePlanResponse, code int) error {
	r.APIVersion, r.Kind = GroupVersion, "GenerateUpgradePlanResponse"
	if h.Answered != nil {
		h.Answered(source, r.Status)
	}
	return c.JSON(code, r)
}

// decode reads a JSON body of at most MaxBody bytes into dst; fields
// Cluster API adds (the Cluster object, settings) are ignored.
func decode(c echo.Context, dst any) error {
	r := c.Request()
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, MaxBody))
	if tl := core.OverLimit(err); tl != nil {
		return tl
	}
	if err != nil {
		return fmt.Errorf("request body: %w (at most %d bytes)", err, MaxBody)
	}
	if err := json.Unmarshal(body, dst); err != nil {
		return fmt.Errorf("request body is not a GenerateUpgradePlanRequest: %w", err)
	}
	return nil
}

// drain reads (and bounds) a body the hook does not need.
func drain(c echo.Context) error {
	_, err := io.Copy(io.Discard, http.MaxBytesReader(c.Response(), c.Request().Body, MaxBody))
	if tl := core.OverLimit(err); tl != nil {
		return tl
	}
	if err != nil {
		return fmt.Errorf("%w: request body: %w", resolver.ErrInvalid, err)
	}
	return nil
}
