package main

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
)

// apiClient talks to a Tidemark server for the commands people run:
// resolve, channels, promote, unpin, block, unblock, history.
type apiClient struct {
	base  *url.URL
	token string
	http  *http.Client
}

// clientFlags are the flags every client command shares.
type clientFlags struct {
	server string
	output string
}

func (f *clientFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.server, "server", "", "Tidemark server URL (default $TIDEMARK_SERVER, else http://localhost:8080)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "output format: text or json")
}

func (f *clientFlags) client(e *env) (*apiClient, error) {
	if f.output != "text" && f.output != "json" {
		return nil, fmt.Errorf("--output %q: want text or json", f.output)
	}
	server := f.server
	if server == "" {
		server = e.getenv("TIDEMARK_SERVER")
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
		token: e.getenv("TIDEMARK_TOKEN"),
		http:  &http.Client{Timeout: 30 * time.Second},
	}, nil
}

// problem is an RFC 9457 error body.
type problem struct {
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// apiError is a non-2xx answer, turned into a line that says what to do.
type apiError struct {
	status int
	detail string
	scope  string // the scope the call needed, for 401/403 advice
}

func (e *apiError) Error() string {
	switch e.status {
	case http.StatusUnauthorized:
		return fmt.Sprintf("401: set TIDEMARK_TOKEN to a token with scope %s (tidemark token create --name NAME --scope %s)", e.scope, e.scope)
	case http.StatusForbidden:
		return fmt.Sprintf("403: the token in TIDEMARK_TOKEN lacks scope %s: %s", e.scope, e.detail)
	case http.StatusPreconditionFailed:
		return "412: the channel changed while you were working; look again (tidemark channels) and retry"
	}
	if e.detail == "" {
		e.detail = http.StatusText(e.status)
	}
	return fmt.Sprintf("%d: %s", e.status, e.detail)
}

// call sends a request and decodes a JSON answer into out (unless nil). It
// returns the response headers for ETag handling.
func (c *apiClient) call(ctx context.Context, method, path string, query url.Values, header http.Header, body, out any, scope string) (http.Header, error) {
	u := c.base.JoinPath(path)
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
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
		return nil, fmt.Errorf("cannot reach %s: %w", c.base.Redacted(), unwrapURLError(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading answer: %w", method, u.Path, err)
	}
	if resp.StatusCode >= 300 {
		var p problem
		_ = json.Unmarshal(data, &p)
		detail := p.Detail
		if detail == "" {
			detail = p.Title
		}
		return resp.Header, &apiError{status: resp.StatusCode, detail: detail, scope: scope}
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return nil, fmt.Errorf("%s %s: answer is not the JSON expected: %w", method, u.Path, err)
		}
	}
	return resp.Header, nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// orDash prints "-" for empty cells so table columns stay readable.
func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
