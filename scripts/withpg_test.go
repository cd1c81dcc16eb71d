// Package scripts holds the development scripts; its tests run them.
package scripts

import (
	"bufio"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// withPG runs scripts/with-pg on args with no DATABASE_URL of its own (make
// test sets one, which would make the script skip the cluster).
func withPG(args ...string) *exec.Cmd {
	cmd := exec.Command("./with-pg", args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd
}

func ephemeralRange(t *testing.T) (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	lo, _ = strconv.Atoi(f[0])
	hi, _ = strconv.Atoi(f[1])
	return lo, hi
}

// TestWithPGPortIsOutsideTheEphemeralRange: a port the kernel may hand to an
// outgoing connection can be taken before Postgres binds it.
func TestWithPGPortIsOutsideTheEphemeralRange(t *testing.T) {
	lo, hi := ephemeralRange(t)
	for range 3 {
		out, err := withPG("sh", "-c", "echo $DATABASE_URL").Output()
		if err != nil {
			t.Fatalf("with-pg: %v", err)
		}
		u, err := url.Parse(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(u.Port())
		if port == 0 || (port >= lo && port <= hi) {
			t.Errorf("port %d is inside the ephemeral range %d-%d", port, lo, hi)
		}
	}
}

// TestWithPGStopsItsTreeOnHangup: closing the terminal of make run sends
// SIGHUP to the process group; tidemark serve takes SIGHUP as "reload", so
// the wrapper must stop the command's whole tree and the cluster itself.
func TestWithPGStopsItsTreeOnHangup(t *testing.T) {
	// A terminal's hangup reaches processes that have not ignored it. Run
	// under nohup (a CI runner, a detached shell), this process ignores
	// SIGHUP, with-pg would inherit that, and bash cannot trap a signal
	// ignored on entry: the test would then try what nohup asks for, not a
	// closed terminal. Handling it here makes the child start from the
	// default, as a shell in a terminal does.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			// The grandchild ignores HUP, as serve does; it must still go.
			cmd := withPG("sh", "-c", `sh -c 'trap "" HUP; echo $$; echo $DATABASE_URL; exec sleep 300' & wait`)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(stdout)
			pidLine, _ := r.ReadString('\n')
			urlLine, _ := r.ReadString('\n')
			pid, err := strconv.Atoi(strings.TrimSpace(pidLine))
			if err != nil {
				_ = cmd.Process.Kill()
				t.Fatalf("no pid from the command: %q", pidLine)
			}
			u, _ := url.Parse(strings.TrimSpace(urlLine))

			if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				_ = syscall.Kill(pid, syscall.SIGKILL) // in a session of its own
				t.Fatalf("with-pg still running 30 s after %s", sig)
			}
			if alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("the command's child %d outlived with-pg after %s", pid, sig)
			}
			if c, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
				c.Close()
				t.Errorf("Postgres at %s still accepts connections after %s", u.Host, sig)
			}
		})
	}
}

// alive reports whether pid runs (a zombie awaiting its reaper is gone).
func alive(pid int) bool {
	for range 50 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && strings.HasPrefix(string(b[i+1:]), " Z") {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// TestWithPGRefusesAKeptClusterInUse: a second make run while one runs
// must not stop the first one's Postgres (issue 25 item 9): it refuses with
// one line, and the first run's database keeps answering.
func TestWithPGRefusesAKeptClusterInUse(t *testing.T) {
	keep, first, line := startKept(t)
	defer func() { _ = first.Process.Signal(syscall.SIGTERM); _ = first.Wait() }()
	u, err := url.Parse(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	second, err := withPG("--keep", keep, "true").CombinedOutput()
	if err == nil || !strings.Contains(string(second), "in use by another run") || strings.Count(strings.TrimSpace(string(second)), "\n") != 0 {
		t.Errorf("second run: %v %q, want one line saying the cluster is in use", err, second)
	}
	if b, err := os.ReadFile(keep + "/database_url"); err != nil || strings.TrimSpace(string(b)) != u.String() {
		t.Errorf("tmp/pg/database_url = %q (%v), want %s", b, err, u)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
	if err != nil {
		t.Fatalf("the first run's Postgres is gone after the second run: %v", err)
	}
	conn.Close()
}

// TestWithPGRecoversAKeptClusterAfterKill9: a run killed with -9 leaves its
// Postgres running; the next run stops it and starts its own, rather than
// taking the orphan's lock for a live run.
func TestWithPGRecoversAKeptClusterAfterKill9(t *testing.T) {
	keep, first, _ := startKept(t)
	_ = first.Process.Kill() // -9: no trap runs, Postgres stays up
	_ = first.Wait()
	second, err := withPG("--keep", keep, "true").CombinedOutput()
	if err != nil {
		t.Errorf("a run after a kill -9: %v\n%s", err, second)
	}
}

// startKept starts a run of with-pg --keep on a fresh directory that
// prints its DATABASE_URL and waits; it returns the directory, the run and
// the URL line. The caller ends the run.
func startKept(t *testing.T) (keep string, run *exec.Cmd, url string) {
	t.Helper()
	// Not t.TempDir: its parent is 0700, and Postgres runs as its own user.
	dir, err := os.MkdirTemp("", "withpg-keep-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	keep = dir + "/pg"
	run = withPG("--keep", keep, "sh", "-c", `echo "$DATABASE_URL"; sleep 30`)
	out, err := run.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	url, err = bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return keep, run, url
}
