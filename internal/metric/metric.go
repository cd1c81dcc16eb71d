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

// CounterVec, GaugeVec and HistogramVec are prometheus's constructors
// with the options every Tidemark metric sets (a full name and its help)
// as arguments; Counter, Gauge and Histogram the same without labels.
func CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

func HistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}

func Counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func Gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

func Histogram(name, help string, buckets []float64) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
}
