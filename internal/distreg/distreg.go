// Package distreg runs the CNCF distribution registry (Debian's
// /usr/bin/docker-registry) on a free loopback port and pushes tags into it,
// for the indexer's end-to-end test and benchmark.
package distreg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Binary is where Debian's docker-registry package installs the registry.
const Binary = "/usr/bin/docker-registry"

// Registry is a running registry.
type Registry struct {
	Host string // 127.0.0.1:port
	cmd  *exec.Cmd
	done chan struct{}
	tmp  string // a storage directory of its own, removed by Stop
}

// Start runs the registry with filesystem storage under dir (which must
// exist; "": a temporary directory of its own, removed by Stop) and waits
// until it answers. Stop it with Stop.
func Start(ctx context.Context, dir string) (*Registry, error) {
	return StartWith(ctx, dir, Options{})
}

// Options are what a test may add to the registry's configuration.
type Options struct {
	// NotifyURL, when set, is a notifications endpoint: the registry POSTs
	// its push and delete events there (pulls are left out), with
	// NotifyToken as a bearer token.
	NotifyURL   string
	NotifyToken string
}

// notifications is the registry configuration's notifications section.
func (o Options) notifications() string {
	if o.NotifyURL == "" {
		return ""
	}
	return fmt.Sprintf(`notifications:
  endpoints:
    - name: tidemark
      url: %s
      headers:
        Authorization: [%q]
      timeout: 2s
      threshold: 3
      backoff: 100ms
      ignore:
        actions: [pull]
`, o.NotifyURL, "Bearer "+o.NotifyToken)
}

// StartWith is Start with options.
func StartWith(ctx context.Context, dir string, o Options) (*Registry, error) {
	if _, err := os.Stat(Binary); err != nil {
		return nil, fmt.Errorf("distribution registry %s missing (Debian: apt-get install docker-registry): %w", Binary, err)
	}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "distreg-")
		if err != nil {
			return nil, err
		}
		r, err := StartWith(ctx, tmp, o)
		if err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
		r.tmp = tmp
		return r, nil
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	host := fmt.Sprintf("127.0.0.1:%d", port)
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
%s`, filepath.Join(dir, "storage"), host, o.notifications())
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(Binary, "serve", cfgPath)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", Binary, err)
	}
	r := &Registry{Host: host, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(r.done) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r, nil
			}
		}
		select {
		case <-r.done:
			return nil, fmt.Errorf("%s exited at start: %s", Binary, out.String())
		case <-ctx.Done():
			r.Stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.Stop()
			return nil, fmt.Errorf("%s not answering on %s after 15s: %s", Binary, host, out.String())
		}
	}
}

// PID is the registry process's id (a benchmark reads its CPU time).
func (r *Registry) PID() int { return r.cmd.Process.Pid }

// Stop ends the registry process.
func (r *Registry) Stop() {
	_ = r.cmd.Process.Kill()
	<-r.done
	if r.tmp != "" {
		_ = os.RemoveAll(r.tmp)
	}
}

// Push writes one small random image to repo and points every tag at it,
// with conc manifest PUTs in flight. It returns the image's digest.
func Push(ctx context.Context, host, repo string, tags []string, conc int) (v1.Hash, error) {
	img, err := random.Image(512, 1)
	if err != nil {
		return v1.Hash{}, err
	}
	return PushImage(ctx, img, host, repo, tags, conc)
}

// PushImage is Push with a given image.
func PushImage(ctx context.Context, img v1.Image, host, repo string, tags []string, conc int) (v1.Hash, error) {
	if len(tags) == 0 {
		return v1.Hash{}, errors.New("push: no tags")
	}
	ref, err := name.NewTag(host+"/"+repo+":"+tags[0], name.Insecure)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return v1.Hash{}, fmt.Errorf("pushing %s: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	// Tagging is a manifest PUT each; remote.Tag would ping and check the
	// blobs again for every tag.
	raw, err := img.RawManifest()
	if err != nil {
		return v1.Hash{}, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return v1.Hash{}, err
	}
	work := make(chan string)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range max(conc, 1) {
		wg.Go(func() {
			for tag := range work {
				if err := putManifest(ctx, host, repo, tag, string(mt), raw); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for _, t := range tags[1:] {
		work <- t
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return v1.Hash{}, err
	default:
	}
	return digest, nil
}

func putManifest(ctx context.Context, host, repo, tag, mediaType string, raw []byte) error {
	url := fmt.Sprintf("http://%s/v2/%s/manifests/%s", host, repo, tag)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", mediaType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("tagging %s:%s: %w", repo, tag, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("tagging %s:%s: %s", repo, tag, resp.Status)
	}
	return nil
}

// FreePort is a loopback TCP port nothing listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
