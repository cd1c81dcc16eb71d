package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark-dev/tidemark/openapi"
)

// apiClient talks to a Tidemark server for the commands people run:
// resolve, channels, sources, versions, history, promote, unpin, block,
// unblock, scan. It speaks the wire types of package openapi.
type apiClient struct {
	base  *url.URL
	token string
	http  *http.Client
}

// clientFlags are the flags every client command shares.
type clientFlags struct {
	server string
	output OutputFlag
}

func (f *clientFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.server, "server", "", "Tidemark server URL (default $TIDEMARK_SERVER, else http://localhost:8080)")
	f.output.Register(cmd)
}

func (f *clientFlags) client(e *Env) (*apiClient, error) {
	if err := f.output.Check(); err != nil {
		return nil, err
	}
	server := f.server
	if server == "" {
		server = e.Getenv("TIDEMARK_SERVER")
	}
	if server == "" {
		server = "http://localhost:8080"
	}
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server %q: want an http(s) URL such as http://localhost:8080", server)
	}
	return &apiClient{
		base:  u,
		token: e.Getenv("TIDEMARK_TOKEN"),
		http:  &http.Client{Timeout: 30 * time.Second},
	}, nil
}

// apiError is a non-2xx answer, turned into a line that says what to do.
type apiError struct {
	status  int
	detail  string
	scope   string // the scope the call needed, for 401/403 advice
	noToken bool   // TIDEMARK_TOKEN was not set
}

func (e *apiError) Error() string {
	switch e.status {
	case http.StatusUnauthorized:
		if e.noToken {
			return fmt.Sprintf("401: TIDEMARK_TOKEN is not set: set it to a token with scope %s (tidemark token create --name NAME --scope %s)", e.scope, e.scope)
		}
		// The server's reason (unknown, revoked) says which fix applies.
		return fmt.Sprintf("401: %s: set TIDEMARK_TOKEN to a token with scope %s (tidemark token create --name NAME --scope %s)", e.reason(), e.scope, e.scope)
	case http.StatusForbidden:
		return fmt.Sprintf("403: the token in TIDEMARK_TOKEN lacks scope %s: %s", e.scope, e.reason())
	case http.StatusPreconditionFailed:
		return "412: the channel changed while you were working; look again (tidemark channels) and retry"
	}
	return fmt.Sprintf("%d: %s", e.status, e.reason())
}

func (e *apiError) reason() string {
	if e.detail == "" {
		return strings.ToLower(http.StatusText(e.status))
	}
	return e.detail
}

// call sends a request and returns the answer's JSON body, as sent, and its
// headers (for ETag handling). A non-2xx answer is an *apiError.
func (c *apiClient) call(ctx context.Context, method, path string, query url.Values, header http.Header, body any, scope string) ([]byte, http.Header, error) {
	u := c.base.JoinPath(path)
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// Most often no server listens where the default points: say how
		// to point elsewhere.
		return nil, nil, fmt.Errorf("cannot reach %s: %w (is tidemark serve running there? point --server or TIDEMARK_SERVER at it)", c.base.Redacted(), unwrapURLError(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: reading answer: %w", method, u.Path, err)
	}
	if resp.StatusCode >= 300 {
		var p openapi.Problem
		_ = json.Unmarshal(data, &p)
		detail := p.Detail
		if detail == "" {
			detail = p.Title
		}
		return nil, resp.Header, &apiError{status: resp.StatusCode, detail: detail, scope: scope, noToken: c.token == ""}
	}
	return data, resp.Header, nil
}

// get calls and decodes the answer into out, returning the raw JSON too.
// A read that needs a token needs scope read, so a 401 advises that one.
func (c *apiClient) get(ctx context.Context, path string, query url.Values, out any) ([]byte, http.Header, error) {
	return c.do(ctx, http.MethodGet, path, query, nil, nil, out, "read")
}

// do calls and decodes the answer into out (unless nil).
func (c *apiClient) do(ctx context.Context, method, path string, query url.Values, header http.Header, body, out any, scope string) ([]byte, http.Header, error) {
	raw, hdr, err := c.call(ctx, method, path, query, header, body, scope)
	if err != nil {
		return nil, hdr, err
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, hdr, fmt.Errorf("%s %s: answer is not the JSON expected: %w", method, path, err)
		}
	}
	return raw, hdr, nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// OrDash prints "-" for empty cells so table columns stay readable.
func OrDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// stampPtr is stamp for the API's nullable times.
func stampPtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return Stamp(*t)
}

// run is a client command's RunE: the client made from the flags, then
// body.
func (f *clientFlags) run(e *Env, body func(cmd *cobra.Command, c *apiClient, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := f.client(e)
		if err != nil {
			return err
		}
		return body(cmd, c, args)
	}
}

// oneOrAll is GET path (every one) or, with a name in args, GET path/NAME
// (that one), as a list either way; raw is the answer as sent.
func oneOrAll[T any](ctx context.Context, c *apiClient, path string, args []string) (list []T, raw []byte, err error) {
	if len(args) == 1 {
		var one T
		raw, _, err = c.get(ctx, path+"/"+url.PathEscape(args[0]), nil, &one)
		return []T{one}, raw, err
	}
	raw, _, err = c.get(ctx, path, nil, &list)
	return list, raw, err
}
