package indexer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/tidemark-dev/tidemark/indexer/registryhttp"
)

// The listing is done here rather than with ggcr's remote.List/Lister because
// a page whose body breaks off (truncated JSON, a reset mid-body) must be
// fetched again, and the Lister forgets where it was after an error; and
// because progress and duplicate handling need the pages one by one.

const (
	pageSize        = 1000 // asked for when the registry's own page is too large
	maxBodyAttempts = 3    // a page whose body cannot be read or decoded is fetched again
)

type tagPage struct {
	Tags []string
}

// lister walks a repository's tag list page by page, following Link headers.
type lister struct {
	client   *http.Client // authenticated, retrying, counting
	repo     name.Repository
	pageSize int
	limits   registryhttp.PageLimits // per page (registryhttp.DecodeTagPage)
	progress func(pages, tags int)   // called after every page
	// first, when set, is the answer to the first page's request already
	// made (Indexer.probe); it is used once, closed by the lister.
	first *http.Response
}

// list returns every tag once, in registry order. Any error means the listing
// is incomplete and its tags must not be trusted to say what is gone.
//
// The first request asks for the registry's own page size, as crane and
// docker do: registries that page choose a size they serve well, and the
// distribution registry and others send every tag at once, so that each
// page asked for by size would cost a round trip more (at 100 ms each, a
// 10,000-tag listing took 11 round trips instead of 2). Only when that one
// page is over the caps is the list asked for again in pages of pageSize.
func (l *lister) list(ctx context.Context) ([]string, error) {
	defer func() {
		if l.first != nil {
			l.first.Body.Close()
			l.first = nil
		}
	}()
	tags, err := l.walk(ctx, "")
	if errors.Is(err, registryhttp.ErrPageTooLarge) && l.pageSize > 0 {
		return l.walk(ctx, fmt.Sprintf("n=%d", l.pageSize))
	}
	return tags, err
}

func (l *lister) walk(ctx context.Context, query string) ([]string, error) {
	u := &url.URL{
		Scheme:   l.repo.Scheme(),
		Host:     l.repo.RegistryStr(),
		Path:     fmt.Sprintf("/v2/%s/tags/list", l.repo.RepositoryStr()),
		RawQuery: query,
	}
	var (
		tags    []string
		seen    = map[string]struct{}{}
		visited = map[string]struct{}{}
		pages   int
	)
	for next := u; next != nil; {
		key := next.String()
		if _, ok := visited[key]; ok {
			return nil, fmt.Errorf("listing %s: page %d links back to %s", l.repo, pages+1, key)
		}
		visited[key] = struct{}{}
		page, link, err := l.page(ctx, next)
		if err != nil {
			return nil, fmt.Errorf("listing %s: page %d: %w", l.repo, pages+1, err)
		}
		pages++
		// A list that changes between pages can repeat a tag (e.g. the
		// registry resumes after a tag that was deleted meanwhile); the store
		// takes each tag once.
		for _, t := range page.Tags {
			if _, dup := seen[t]; !dup {
				seen[t] = struct{}{}
				tags = append(tags, t)
			}
		}
		if l.progress != nil {
			l.progress(pages, len(tags))
		}
		next = link
	}
	return tags, nil
}

// page fetches one page; a body that breaks off or does not decode is fetched
// again (the transport below already retried statuses and network errors).
func (l *lister) page(ctx context.Context, u *url.URL) (tagPage, *url.URL, error) {
	var lastErr error
	for range maxBodyAttempts {
		resp, err := l.get(ctx, u)
		if err != nil {
			return tagPage{}, nil, err
		}
		if err := transport.CheckError(resp, http.StatusOK); err != nil {
			resp.Body.Close()
			return tagPage{}, nil, err
		}
		var p tagPage
		p.Tags, err = registryhttp.DecodeTagPage(resp.Body, l.repo.RegistryStr(), l.limits)
		resp.Body.Close()
		if err != nil {
			if ctx.Err() != nil {
				return tagPage{}, nil, ctx.Err()
			}
			if errors.Is(err, registryhttp.ErrPageTooLarge) {
				return tagPage{}, nil, err
			}
			lastErr = fmt.Errorf("reading tag list %s: %w", u.Redacted(), err)
			continue
		}
		base := u
		if resp.Request != nil && resp.Request.URL != nil {
			base = resp.Request.URL
		}
		link, err := nextLink(resp.Header.Get("Link"), base, l.repo)
		return p, link, err
	}
	return tagPage{}, nil, lastErr
}

// get fetches u, or takes the probe's answer when it is u's.
func (l *lister) get(ctx context.Context, u *url.URL) (*http.Response, error) {
	if f := l.first; f != nil && f.Request != nil && f.Request.URL.Path == u.Path && f.Request.URL.RawQuery == u.RawQuery {
		l.first = nil
		return f, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	return l.client.Do(req)
}

// nextLink parses `<URL>; rel="next"` relative to the page's URL and refuses
// a link to another registry or scheme, so that a registry cannot send our
// credentials elsewhere, nor in clear text (https to http on the same host).
func nextLink(header string, base *url.URL, repo name.Repository) (*url.URL, error) {
	if header == "" {
		return nil, nil
	}
	start, end := strings.IndexByte(header, '<'), strings.IndexByte(header, '>')
	if start != 0 || end < start {
		return nil, fmt.Errorf("bad Link header %q", header)
	}
	ref := header[1:end]
	if ref == "" {
		return nil, nil
	}
	u, err := url.Parse(ref)
	if err != nil {
		return nil, fmt.Errorf("bad Link header %q: %w", header, err)
	}
	u = base.ResolveReference(u)
	if u.Host != repo.RegistryStr() {
		return nil, fmt.Errorf("link to %q leaves registry %q", u.Host, repo.RegistryStr())
	}
	if u.Scheme != repo.Scheme() {
		return nil, fmt.Errorf("link %s changes the scheme of registry %q from %s", u.Redacted(), repo.RegistryStr(), repo.Scheme())
	}
	if !strings.HasSuffix(u.Path, "/tags/list") {
		return nil, errors.New("link " + u.Redacted() + " is not a tag list")
	}
	return u, nil
}
