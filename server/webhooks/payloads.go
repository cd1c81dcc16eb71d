// Package webhooks reads what registries send when a tag is pushed or
// deleted (distribution, Harbor, Quay, GitHub Packages, Docker Hub) and
// checks the secrets those that cannot send a token use. It holds no
// route: server/api/webhooks.go authenticates, calls Parse and queues the
// events for the indexer.
package webhooks

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/tidemark-dev/tidemark/internal/logtext"
	"github.com/tidemark-dev/tidemark/resolver"
)

// The registries' own payloads, reduced to what Tidemark needs: which
// repository, which tag, pushed or deleted. Sample payloads of each are in
// testdata/payloads. Anything else in a payload (pulls, blob pushes,
// pushes by digest only) yields no event.

// PushEvent is one tag a registry webhook names.
type PushEvent struct {
	Host       string // the registry as the payload names it; "" when it does not
	Repository string // path within the registry, "org/app"
	Tag        string
	Delete     bool
}

// Parse turns a payload of kind into events. An error is a payload
// that is not that registry's JSON at all (400); a payload about something
// else (a pull, a ping) is no error and no event.
func Parse(kind string, body []byte) ([]PushEvent, error) {
	var (
		evs []PushEvent
		err error
	)
	switch kind {
	case "distribution":
		evs, err = parseDistribution(body)
	case "harbor":
		evs, err = parseHarbor(body)
	case "quay":
		evs, err = parseQuay(body)
	case "github":
		evs, err = parseGitHub(body)
	case "dockerhub":
		evs, err = parseDockerHub(body)
	default:
		return nil, fmt.Errorf("%w: webhook kind %q", resolver.ErrNotFound, kind)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s webhook payload: %w", resolver.ErrInvalid, kind, err)
	}
	for i, ev := range evs {
		if !validTag.MatchString(ev.Tag) {
			return nil, fmt.Errorf("%w: %s webhook payload: event %d: tag %q is not a tag name ([A-Za-z0-9_][A-Za-z0-9._-]{0,127})", resolver.ErrInvalid, kind, i, logtext.Cut(ev.Tag, 256))
		}
		if !validRepository.MatchString(ev.Repository) || len(ev.Repository) > 255 {
			return nil, fmt.Errorf("%w: %s webhook payload: event %d: repository %q is not an OCI repository name", resolver.ErrInvalid, kind, i, logtext.Cut(ev.Repository, 256))
		}
	}
	return evs, nil
}

// The OCI distribution spec's grammar for what a webhook may name
// (CONTRACT section 12): anything else (CR/LF, "../") never reaches a
// registry request.
var (
	validTag        = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)
	validRepository = regexp.MustCompile(`^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*$`)
)

// distribution: the CNCF distribution registry's notifications envelope
// (application/vnd.docker.distribution.events.v1+json).
func parseDistribution(body []byte) ([]PushEvent, error) {
	var env struct {
		Events []struct {
			Action string `json:"action"`
			Target struct {
				Repository string `json:"repository"`
				Tag        string `json:"tag"`
			} `json:"target"`
			Request struct {
				Host string `json:"host"`
			} `json:"request"`
		} `json:"events"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, err
	}
	var out []PushEvent
	for _, e := range env.Events {
		if e.Target.Tag == "" || e.Target.Repository == "" || (e.Action != "push" && e.Action != "delete") {
			continue
		}
		out = append(out, PushEvent{Host: e.Request.Host, Repository: e.Target.Repository, Tag: e.Target.Tag, Delete: e.Action == "delete"})
	}
	return out, nil
}

// harbor: Harbor's default payload format, PUSH_ARTIFACT and
// DELETE_ARTIFACT; the host comes from each resource's resource_url.
func parseHarbor(body []byte) ([]PushEvent, error) {
	var p struct {
		Type      string `json:"type"`
		EventData struct {
			Resources []struct {
				Tag         string `json:"tag"`
				ResourceURL string `json:"resource_url"`
			} `json:"resources"`
			Repository struct {
				RepoFullName string `json:"repo_full_name"`
			} `json:"repository"`
		} `json:"event_data"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, err
	}
	if p.Type != "PUSH_ARTIFACT" && p.Type != "DELETE_ARTIFACT" {
		return nil, nil
	}
	var out []PushEvent
	for _, r := range p.EventData.Resources {
		if r.Tag == "" || p.EventData.Repository.RepoFullName == "" {
			continue
		}
		host, _, _ := strings.Cut(r.ResourceURL, "/")
		if !strings.Contains(r.ResourceURL, "/") {
			host = ""
		}
		out = append(out, PushEvent{Host: host, Repository: p.EventData.Repository.RepoFullName, Tag: r.Tag, Delete: p.Type == "DELETE_ARTIFACT"})
	}
	return out, nil
}

// quay: Quay's "Push to Repository" notification. updated_tags is a list
// of tags (current Quay) or an object of tag to image id (older Quay).
func parseQuay(body []byte) ([]PushEvent, error) {
	var p struct {
		Repository  string          `json:"repository"`
		DockerURL   string          `json:"docker_url"`
		UpdatedTags json.RawMessage `json:"updated_tags"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, err
	}
	var tags []string
	if len(p.UpdatedTags) > 0 && p.UpdatedTags[0] == '{' {
		var m map[string]any
		if err := json.Unmarshal(p.UpdatedTags, &m); err != nil {
			return nil, fmt.Errorf("updated_tags: %w", err)
		}
		for t := range m {
			tags = append(tags, t)
		}
	} else if len(p.UpdatedTags) > 0 && string(p.UpdatedTags) != "null" {
		if err := json.Unmarshal(p.UpdatedTags, &tags); err != nil {
			return nil, fmt.Errorf("updated_tags: %w", err)
		}
	}
	host, repo := splitImage(p.DockerURL)
	if repo == "" {
		repo = p.Repository
	}
	var out []PushEvent
	for _, t := range tags {
		if t != "" && repo != "" {
			out = append(out, PushEvent{Host: host, Repository: repo, Tag: t})
		}
	}
	return out, nil
}

// github: the "package" (and older "registry_package") event of a
// container package published to ghcr.io.
func parseGitHub(body []byte) ([]PushEvent, error) {
	type pkg struct {
		Name           string                 `json:"name"`
		Namespace      string                 `json:"namespace"`
		PackageType    string                 `json:"package_type"`
		Owner          struct{ Login string } `json:"owner"`
		PackageVersion *struct {
			PackageURL        string `json:"package_url"`
			ContainerMetadata *struct {
				Tag struct {
					Name string `json:"name"`
				} `json:"tag"`
			} `json:"container_metadata"`
		} `json:"package_version"`
	}
	var p struct {
		Action          string `json:"action"`
		Package         *pkg   `json:"package"`
		RegistryPackage *pkg   `json:"registry_package"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, err
	}
	k := p.Package
	if k == nil {
		k = p.RegistryPackage
	}
	if k == nil || k.PackageVersion == nil || k.PackageVersion.ContainerMetadata == nil ||
		!strings.EqualFold(k.PackageType, "container") || (p.Action != "published" && p.Action != "updated") {
		return nil, nil
	}
	tag := k.PackageVersion.ContainerMetadata.Tag.Name
	host, repo := splitImage(k.PackageVersion.PackageURL)
	if strings.EqualFold(host, "ghcr.io") {
		// GHCR paths are lowercase; GitHub's events spell the owner as
		// it is written (ghcr.io/Codertocat/hello-world).
		host, repo = "ghcr.io", strings.ToLower(repo)
	}
	if repo == "" {
		owner := k.Namespace
		if owner == "" {
			owner = k.Owner.Login
		}
		host, repo = "ghcr.io", strings.ToLower(owner+"/"+k.Name)
	}
	if tag == "" || repo == "" {
		return nil, nil
	}
	return []PushEvent{{Host: host, Repository: repo, Tag: tag}}, nil
}

// dockerhub: Docker Hub's repository webhook (pushes only).
func parseDockerHub(body []byte) ([]PushEvent, error) {
	var p struct {
		PushData struct {
			Tag string `json:"tag"`
		} `json:"push_data"`
		Repository struct {
			RepoName string `json:"repo_name"`
		} `json:"repository"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, err
	}
	if p.PushData.Tag == "" || p.Repository.RepoName == "" {
		return nil, nil
	}
	return []PushEvent{{Host: "docker.io", Repository: p.Repository.RepoName, Tag: p.PushData.Tag}}, nil
}

// splitImage splits "host/org/app[:tag]" into host and path; a reference
// without a host part (no dot, colon or localhost first) has no host.
func splitImage(ref string) (host, repo string) {
	ref = strings.TrimPrefix(strings.TrimPrefix(ref, "https://"), "http://")
	if ref == "" {
		return "", ""
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i] // a tag
	}
	first, rest, ok := strings.Cut(ref, "/")
	if ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return first, rest
	}
	return "", ref
}
