package registryhttp

import (
	"errors"
	"net"
	"testing"
)

func TestExplainUnreachableLeavesOtherErrorsAlone(t *testing.T) {
	other := errors.New("GET /v2/app/tags/list: unexpected status 404")
	if got := ExplainUnreachable("r.example", other); got != other {
		t.Errorf("explainUnreachable changed %v into %v", other, got)
	}
	dns := &net.DNSError{Name: "r.example", Err: "no such host", IsNotFound: true}
	if got := ExplainUnreachable("r.example", dns); got.Error() != "registry r.example unreachable: cannot resolve r.example: no such host" {
		t.Errorf("DNS failure explained as %q", got)
	}
}
