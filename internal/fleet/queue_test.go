package fleet

import (
	"testing"

	"github.com/tidemark-dev/tidemark/resolver"
)

func TestSightingQueueHoldsAtMostMaxAndHandsOverInOrder(t *testing.T) {
	q := &sightingQueue{max: 3}
	for i, id := range []string{"a", "b", "c", "d"} {
		if ok := q.put(queued{Sighting: resolver.Sighting{Cluster: id}}); ok != (i < 3) {
			t.Fatalf("put %s: %v, want %v", id, ok, i < 3)
		}
	}
	got := q.take(nil)
	if len(got) != 3 || got[0].Cluster != "a" || got[2].Cluster != "c" {
		t.Fatalf("take = %+v, want a, b, c", got)
	}
	// Taken, the queue has room again, in the spare array it was handed.
	spare := make([]queued, 0, 8)
	if !q.put(queued{Sighting: resolver.Sighting{Cluster: "e"}}) {
		t.Fatal("put after take refused")
	}
	if got := q.take(spare); len(got) != 1 || got[0].Cluster != "e" {
		t.Fatalf("second take = %+v, want e", got)
	}
	if !q.put(queued{Sighting: resolver.Sighting{Cluster: "f"}}) || &q.buf[0] != &spare[:1][0] {
		t.Fatal("the queue does not reuse the spare array")
	}
}
