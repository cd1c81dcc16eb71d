// Package image assembles Tidemark's multi-arch OCI image without a
// container daemon and without pulling a base image: each platform's image
// is one layer on an empty base holding the static binary, a CA bundle,
// /etc/passwd and /etc/group for the non-root user, and an empty /tmp.
//
// Everything that would vary between two builds of one commit is fixed:
// every timestamp is Options.Created, tar entries are written in sorted
// order with uid/gid 0 and no user names, and gzip carries no mtime. Two
// builds from the same binaries and CA bundle therefore have one digest.
package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// UID is the numeric user (and group) the image runs as: distroless's
// "nonroot", so manifests written for the old Dockerfile image still fit.
const UID = 65532

// Binary is the static tidemark executable for one platform.
type Binary struct {
	OS, Arch string
	Path     string
}

// Options describe one build. Created fixes every timestamp in the image
// (the commit time, or SOURCE_DATE_EPOCH).
type Options struct {
	Binaries []Binary
	CACerts  string // a PEM bundle, e.g. Debian's /etc/ssl/certs/ca-certificates.crt
	Version  string
	Revision string
	Source   string
	Created  time.Time
}

// Labels are the OCI annotations set on the image config, every manifest
// and the index.
func (o Options) Labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    "tidemark",
		"org.opencontainers.image.source":   o.Source,
		"org.opencontainers.image.revision": o.Revision,
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.created":  o.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
}

// Build returns the OCI image index with one image per binary.
func Build(o Options) (v1.ImageIndex, error) {
	if len(o.Binaries) == 0 {
		return nil, errors.New("image: no binaries to package")
	}
	if o.Version == "" || o.Revision == "" || o.Source == "" {
		return nil, fmt.Errorf("image: version %q, revision %q and source %q must all be set", o.Version, o.Revision, o.Source)
	}
	certs, err := os.ReadFile(o.CACerts)
	if err != nil {
		return nil, fmt.Errorf("image: CA bundle: %w", err)
	}
	o.Created = o.Created.UTC().Truncate(time.Second)
	var idx v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	bins := append([]Binary(nil), o.Binaries...)
	sort.Slice(bins, func(i, j int) bool { return bins[i].OS+"/"+bins[i].Arch < bins[j].OS+"/"+bins[j].Arch })
	for _, b := range bins {
		img, err := platformImage(o, b, certs)
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{
				Platform:    &v1.Platform{OS: b.OS, Architecture: b.Arch},
				Annotations: o.Labels(),
			},
		})
	}
	return mutate.Annotations(idx, o.Labels()).(v1.ImageIndex), nil
}

func platformImage(o Options, b Binary, certs []byte) (v1.Image, error) {
	bin, err := os.ReadFile(b.Path)
	if err != nil {
		return nil, fmt.Errorf("image: %s/%s binary: %w", b.OS, b.Arch, err)
	}
	layerTar, err := rootfs(o.Created, bin, certs)
	if err != nil {
		return nil, fmt.Errorf("image: %s/%s layer: %w", b.OS, b.Arch, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image: %s/%s layer: %w", b.OS, b.Arch, err)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: o.Created},
			CreatedBy: "tidemark-image " + o.Version,
			Comment:   "static tidemark binary, CA certificates, non-root user",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("image: %s/%s: %w", b.OS, b.Arch, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image: %s/%s config: %w", b.OS, b.Arch, err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = b.OS, b.Arch
	cf.Created = v1.Time{Time: o.Created}
	cf.Config.User = fmt.Sprintf("%d:%d", UID, UID)
	// The binary is the entrypoint; serve is only the default command, so
	// `docker run IMAGE version` and Kubernetes args ["serve", ...] both work.
	cf.Config.Entrypoint = []string{"/tidemark"}
	cf.Config.Cmd = []string{"serve"}
	cf.Config.WorkingDir = "/"
	cf.Config.Env = []string{"PATH=/", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	cf.Config.ExposedPorts = map[string]struct{}{"8080/tcp": {}}
	cf.Config.Labels = o.Labels()
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image: %s/%s config: %w", b.OS, b.Arch, err)
	}
	return mutate.Annotations(img, o.Labels()).(v1.Image), nil
}

type entry struct {
	name string
	mode int64
	data []byte // nil for a directory
}

// rootfs is the layer's tar: sorted entries, owned by root, all at mtime.
func rootfs(mtime time.Time, bin, certs []byte) ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, UID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", UID)
	entries := []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: certs},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700},
		{name: "tidemark", mode: 0o755, data: bin},
		{name: "tmp/", mode: 0o1777},
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if e.name == "home/nonroot/" {
			h.Uid, h.Gid = UID, UID
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
