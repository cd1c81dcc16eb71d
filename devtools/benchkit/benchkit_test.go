package benchkit

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/store/storetest"
)

func TestMetric(t *testing.T) {
	body := "# HELP x\ntidemark_connections_refused_total{reason=\"total\"} 19744\ntidemark_x 2.5\n"
	if v, ok := Metric(body, `tidemark_connections_refused_total{reason="total"}`); !ok || v != "19744" {
		t.Errorf("Metric = %q %v, want 19744", v, ok)
	}
	if _, ok := Metric(body, `tidemark_connections_refused_total{reason="address"}`); ok {
		t.Errorf("an absent series was found")
	}
	if f := MetricValue(body, "tidemark_x"); f != 2.5 {
		t.Errorf("MetricValue = %v, want 2.5", f)
	}
}

func TestPeakRSSOfThisProcess(t *testing.T) {
	if rss := PeakRSS(os.Getpid()); rss < 1<<20 {
		t.Errorf("PeakRSS of this test = %d bytes, want at least 1 MiB", rss)
	}
	if rss := PeakRSS(-1); rss != 0 {
		t.Errorf("PeakRSS of no process = %d, want 0", rss)
	}
}

func TestProcessCPUCountsWork(t *testing.T) {
	// Work until getrusage has counted 100 ms of it (however long the
	// machine's load makes that take), then /proc must have counted it too,
	// in its 10 ms ticks.
	before, self := ProcessCPU(0), ProcessCPU(os.Getpid())
	x := 0
	for deadline := time.Now().Add(time.Minute); ProcessCPU(0)-before < 100*time.Millisecond; x++ {
		if time.Now().After(deadline) {
			t.Fatalf("getrusage counted %s of a minute's work (x %d)", ProcessCPU(0)-before, x)
		}
	}
	if d := ProcessCPU(os.Getpid()) - self; d < 80*time.Millisecond {
		t.Errorf("/proc/<pid>/stat counted %s of the 100 ms getrusage did, want at least 80 ms", d)
	}
	if ProcessCPU(-1) != 0 {
		t.Errorf("ProcessCPU of no process is not 0")
	}
}

func TestPostgresCPUCountsABackendsWork(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.AdminURL(t)
	read, err := PostgresCPU(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	before := read()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	if err := conn.QueryRow(ctx, `select sum(g) from generate_series(1, 3000000) g`).Scan(&sum); err != nil {
		t.Fatal(err)
	}
	during := read() - before
	conn.Close(ctx)
	// Once the backend has ended and been reaped, its time is still there,
	// in the postmaster's children's time.
	time.Sleep(200 * time.Millisecond)
	after := read() - before
	if during < 50*time.Millisecond || after < during {
		t.Errorf("the cluster's CPU grew by %s during a 3M-row sum and %s after its backend ended, want >= 50 ms and not less after", during, after)
	}
}

func TestSpread(t *testing.T) {
	if m, lo, hi := Spread([]float64{3, 1, 2, 10}); m != 2.5 || lo != 1 || hi != 10 {
		t.Errorf("Spread = %v %v %v, want 2.5 1 10", m, lo, hi)
	}
}
