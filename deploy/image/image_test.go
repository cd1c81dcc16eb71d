package image_test

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/tidemark-dev/tidemark/deploy/image"
)

const version = "0.0.0-imagetest"

// makeImage runs the real `make image` (cross-compiled binaries and all)
// into dir with its binaries in build, and returns the layout's index
// digest.
func makeImage(t *testing.T, dir, build string, more ...string) v1.Hash {
	t.Helper()
	mk(t, append([]string{"image", "IMAGE_DIR=" + dir, "IMAGE_BUILD=" + build}, more...)...)
	idx, tag, err := image.ReadLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tag != version {
		t.Errorf("layout tag %q, want %q", tag, version)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mk(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("make", append([]string{"-s", "-C", "../..", "VERSION=" + version}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func git(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// TestMakeImage builds the image with make, checks that a second build
// of one commit is the same image, pushes it to a loopback registry with
// make image-push, and checks what a cluster would pull.
//
// The binaries are cross-compiled once (the test's own cost is that
// compile): the second layout is written from them, and one binary is
// linked again, byte for byte the first.
func TestMakeImage(t *testing.T) {
	tmp := t.TempDir()
	build := filepath.Join(tmp, "build")
	first := makeImage(t, filepath.Join(tmp, "a"), build)
	if second := makeImage(t, filepath.Join(tmp, "b"), build, "IMAGE_PREBUILT=1"); second != first {
		t.Fatalf("two layouts of one build: index digests %s and %s", first, second)
	}
	again := filepath.Join(tmp, "again")
	makeImage(t, filepath.Join(tmp, "c"), again, "IMAGE_PLATFORMS=linux/amd64")
	for _, f := range []string{build, again} {
		if _, err := os.Stat(filepath.Join(f, "linux_amd64", "tidemark")); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := os.ReadFile(filepath.Join(build, "linux_amd64", "tidemark"))
	b, _ := os.ReadFile(filepath.Join(again, "linux_amd64", "tidemark"))
	if !bytes.Equal(a, b) {
		t.Errorf("two builds of one commit's linux/amd64 binary differ (%d and %d bytes)", len(a), len(b))
	}

	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/tidemark"
	out := mk(t, "image-push", "IMAGE_DIR="+filepath.Join(tmp, "a"), "REGISTRY="+repo)
	if want := repo + "@" + first.String(); !strings.Contains(out, want) {
		t.Errorf("image-push printed %q, want %s", out, want)
	}
	// The layout was this commit's: image-push pushed it without building
	// it a third time, and said what it did.
	if strings.Contains(out, "image: building") || !strings.Contains(out, "image: pushing") {
		t.Errorf("image-push of a current layout printed %q, want a push and no build", out)
	}

	ref, err := name.ParseReference(repo + ":" + version)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := idx.Digest(); d != first {
		t.Errorf("pushed index %s, built %s", d, first)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := strconv.ParseInt(git(t, "log", "-1", "--format=%ct"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.title":    "tidemark",
		"org.opencontainers.image.source":   "https://github.com/tidemark-dev/tidemark",
		"org.opencontainers.image.revision": git(t, "rev-parse", "HEAD"),
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.created":  time.Unix(epoch, 0).UTC().Format(time.RFC3339),
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	if diff := cmp.Diff(wantLabels, m.Annotations); diff != "" {
		t.Errorf("index annotations (-want +got):\n%s", diff)
	}
	var platforms []string
	for _, desc := range m.Manifests {
		p := desc.Platform.OS + "/" + desc.Platform.Architecture
		platforms = append(platforms, p)
		t.Run(p, func(t *testing.T) {
			img, err := idx.Image(desc.Digest)
			if err != nil {
				t.Fatal(err)
			}
			checkImage(t, img, desc.Platform, wantLabels)
		})
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, platforms); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}
}

func checkImage(t *testing.T, img v1.Image, p *v1.Platform, labels map[string]string) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != p.OS || cf.Architecture != p.Architecture {
		t.Errorf("config platform %s/%s, want %s/%s", cf.OS, cf.Architecture, p.OS, p.Architecture)
	}
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", c.User)
	}
	if diff := cmp.Diff([]string{"/tidemark"}, c.Entrypoint); diff != "" {
		t.Errorf("entrypoint (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"serve"}, c.Cmd); diff != "" {
		t.Errorf("cmd (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(labels, c.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if want := labels["org.opencontainers.image.created"]; cf.Created.UTC().Format(time.RFC3339) != want {
		t.Errorf("created %s, want the commit time %s", cf.Created, want)
	}
	files := layerFiles(t, img)
	if !strings.Contains(string(files["etc/passwd"]), ":65532:65532:") {
		t.Errorf("/etc/passwd has no user 65532:\n%s", files["etc/passwd"])
	}
	if !bytes.Contains(files["etc/ssl/certs/ca-certificates.crt"], []byte("BEGIN CERTIFICATE")) {
		t.Error("no CA certificates at /etc/ssl/certs/ca-certificates.crt")
	}
	f, err := elf.NewFile(bytes.NewReader(files["tidemark"]))
	if err != nil {
		t.Fatalf("/tidemark: %v", err)
	}
	wantMachine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Architecture]
	if f.Machine != wantMachine {
		t.Errorf("/tidemark is for %v, want %v", f.Machine, wantMachine)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Error("/tidemark asks for a dynamic loader; want a static binary")
		}
	}
	if s := f.Section(".symtab"); s != nil {
		t.Error("/tidemark has a symbol table; want -s -w")
	}
}

// layerFiles reads every regular file of the image's layers, checking the
// tar entries are sorted and owned by root or the non-root user.
func layerFiles(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		prev := ""
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Name < prev {
				t.Errorf("tar entry %s after %s: want sorted entries", h.Name, prev)
			}
			prev = h.Name
			if h.Uid != 0 && h.Uid != image.UID {
				t.Errorf("%s owned by %d", h.Name, h.Uid)
			}
			if h.Typeflag == tar.TypeReg {
				data, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				files[h.Name] = data
			}
		}
		rc.Close()
	}
	return files
}

// A build that is not fully described fails with a message naming what is
// missing, before anything is written.
func TestBuildNeedsVersionRevisionSource(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tidemark")
	if err := os.WriteFile(bin, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := image.Build(image.Options{
		Binaries: []image.Binary{{OS: "linux", Arch: "amd64", Path: bin}},
		CACerts:  "/etc/ssl/certs/ca-certificates.crt", Version: "1.0.0", Source: "https://example.com/x",
	})
	if err == nil || !strings.Contains(err.Error(), `revision ""`) {
		t.Errorf("Build without a revision: %v, want an error naming the empty revision", err)
	}
}
