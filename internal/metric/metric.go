// Package metric holds what every part of Tidemark that exposes metrics
// repeats: registering a set of collectors with a registry that may be
// nil (a test, a tool), saying which part's metrics failed to register.
package metric

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers cs with reg, in order; nil reg registers nothing
// (the collectors still count, unseen). what names the part for the
// error ("indexer", "server"): a second registration of the same
// metrics, two indexers in one process say, says so.
func Register(reg prometheus.Registerer, what string, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return fmt.Errorf("registering %s metrics: another %s already registered them: %w", what, what, err)
			}
			return fmt.Errorf("registering %s metrics: %w", what, err)
		}
	}
	return nil
}
