package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"
)

// uiCall runs one of the API's own GET handlers in process and decodes its
// JSON answer into out. The console's resolve form and history show what
// the API answers, validation and error text included, without a second
// copy of that logic. An error is the handler's own (a taxonomy error the
// page renders as the API would); the middleware (metrics, logging) is
// skipped: the console's request is the one counted.
func (s *Server) uiCall(c echo.Context, h echo.HandlerFunc, target string, params []string, out any) error {
	req, err := http.NewRequestWithContext(c.Request().Context(), http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("console: call %s: %w", target, err)
	}
	w := &captureWriter{header: http.Header{}}
	cc := s.echo.NewContext(req, w)
	cc.SetPath(req.URL.Path) // what an error names, as the route would
	var names, values []string
	for i := 0; i+1 < len(params); i += 2 {
		names, values = append(names, params[i]), append(values, params[i+1])
	}
	cc.SetParamNames(names...)
	cc.SetParamValues(values...)
	if err := h(cc); err != nil {
		return err
	}
	if w.status != http.StatusOK {
		return fmt.Errorf("console: call %s: status %d", target, w.status)
	}
	if err := json.Unmarshal(w.body.Bytes(), out); err != nil {
		return fmt.Errorf("console: call %s: %w", target, err)
	}
	return nil
}

// captureWriter keeps an in-process answer for uiCall.
type captureWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *captureWriter) Header() http.Header { return w.header }

func (w *captureWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *captureWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}
