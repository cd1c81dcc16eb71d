package registryhttp

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/tidemark-dev/tidemark/resolver"
)

// UnreachableError is a scan that could not reach the registry at all: no
// DNS answer, connection refused, or no answer in time. Operators read it in
// the log and in the source's status, so it says so plainly instead of
// showing ggcr's nested "authenticating to ...: Get ...: dial tcp ..." text.
type UnreachableError struct {
	registry string
	why      string
	err      error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("registry %s unreachable: %s", e.registry, e.why)
}

func (e *UnreachableError) Unwrap() []error { return []error{resolver.ErrUnavailable, e.err} }

// ExplainUnreachable rewrites a failure to reach registry as an
// unreachableError; any other error comes back unchanged.
func ExplainUnreachable(registry string, err error) error {
	if err == nil {
		return nil
	}
	var dns *net.DNSError
	var op *net.OpError
	var nerr net.Error
	switch {
	case errors.As(err, &dns):
		why := "cannot resolve " + dns.Name
		if dns.Err != "" {
			why += ": " + dns.Err
		}
		return &UnreachableError{registry: registry, why: why, err: err}
	case errors.As(err, &op) && op.Op == "dial":
		return &UnreachableError{registry: registry, why: "cannot connect: " + op.Err.Error(), err: err}
	case errors.As(err, &nerr) && nerr.Timeout(), errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled):
		return &UnreachableError{registry: registry, why: "no answer in time", err: err}
	}
	return err
}
