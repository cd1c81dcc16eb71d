package openapi

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestTypesMatchSchemas holds each wire type to its schema: the same field
// names, a required property never omitted, and a nullable property a
// pointer (or a slice or map), so an edit to one side alone fails here.
func TestTypesMatchSchemas(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(Spec)
	if err != nil {
		t.Fatalf("load openapi.yaml: %v", err)
	}
	for _, v := range []any{Channel{}, ReleaseCollection{}, ReleaseChannel{}, ReleaseError{}, Version{}, Gates{}, Source{}, Scan{},
		Unparsed{}, ResolveAnswer{}, PinRequest{}, ReasonRequest{}, ScanStarted{}, AuditEvent{}, Problem{}, Root{},
		FleetSummary{}, VersionCount{}, FleetCluster{}, FleetClusterPage{}, FleetClusterChannels{},
		WebhookResult{}, Notifications{}, NotificationEvent{}, NotificationEndpoint{},
		Rollout{}, RolloutClusters{}, AlertsResult{}, IgnoredAlert{}, AlertmanagerPayload{}, AlertmanagerAlert{},
		CloudEvent{}, CloudEventData{}, SlackMessage{}, Held{}, RolloutControlRequest{}, ChannelReleases{}, ChannelRelease{}, ResolveRisk{}, RiskRequest{}, Risk{}, RiskList{},
		CincinnatiGraph{}, CincinnatiNode{}, CincinnatiConditionalEdges{}, CincinnatiEdge{}, CincinnatiRisk{}, CincinnatiMatchingRule{},
		ChangeRequest{}, Change{}, ChangeApproval{}, ChangeList{}, FreezeRequest{}, Freeze{}, FreezeList{}} {
		typ := reflect.TypeOf(v)
		t.Run(typ.Name(), func(t *testing.T) {
			ref, ok := doc.Components.Schemas[typ.Name()]
			if !ok {
				t.Fatalf("openapi.yaml has no schema %s", typ.Name())
			}
			s := ref.Value
			var fields []string
			for i := range typ.NumField() {
				f := typ.Field(i)
				name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
				fields = append(fields, name)
				prop, ok := s.Properties[name]
				if !ok {
					t.Errorf("field %s (%q) is not a property of schema %s", f.Name, name, typ.Name())
					continue
				}
				if slices.Contains(s.Required, name) && strings.Contains(opts, "omitempty") {
					t.Errorf("property %q is required but field %s is omitempty", name, f.Name)
				}
				if prop.Value.Type != nil && prop.Value.Type.Includes("null") {
					switch f.Type.Kind() {
					case reflect.Pointer, reflect.Slice, reflect.Map:
					default:
						t.Errorf("property %q is nullable but field %s is a %s", name, f.Name, f.Type)
					}
				}
			}
			for name := range s.Properties {
				if !slices.Contains(fields, name) {
					t.Errorf("property %q of schema %s has no field", name, typ.Name())
				}
			}
		})
	}
}
