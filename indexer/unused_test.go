package indexer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// unusedStore stands in where a test exercises only the registry side; any
// call is a test bug and says so.
type unusedStore struct{}

var errUnused = errors.New("test bug: this test does not use the store")

func (unusedStore) SyncSources(context.Context, []catalog.Source) error { return errUnused }
func (unusedStore) ApplyScan(context.Context, resolver.ScanResult) (catalog.Scan, error) {
	return catalog.Scan{}, errUnused
}
func (unusedStore) TagsWithoutDigest(context.Context, string) ([]string, error) {
	return nil, errUnused
}
func (unusedStore) SetDigests(context.Context, string, map[string]string) error { return errUnused }
func (unusedStore) AddScanRequests(context.Context, int64, int) error           { return errUnused }
func (unusedStore) FailScan(context.Context, int64, error) error                { return errUnused }
func (unusedStore) RecheckedAt(context.Context, string) (time.Time, error) {
	return time.Time{}, errUnused
}
func (unusedStore) SetRecheckedAt(context.Context, string, time.Time) error { return errUnused }

func TestRunWithoutALockSaysSo(t *testing.T) {
	ix, err := New(Options{Store: unusedStore{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "Options.Lock") {
		t.Errorf("Run = %v, want an error naming Options.Lock", err)
	}
}
func (unusedStore) GateTargets(context.Context, string, []string) ([]resolver.Tag, error) {
	return nil, errUnused
}
func (unusedStore) SetGateChecks(context.Context, string, map[string]resolver.GateChecks) (bool, error) {
	return false, errUnused
}
