// Command tidemark-image builds Tidemark's multi-arch OCI image from
// prebuilt static binaries, without a container daemon, and pushes it.
// make image and make image-push run it; see docs/install.md.
//
//	tidemark-image build --out bin/image --version v1.2.3 --revision SHA \
//	    --source URL --created UNIX --binary linux/amd64=PATH --binary linux/arm64=PATH
//	tidemark-image push --layout bin/image --to host/repo
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tidemark-dev/tidemark/deploy/image"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tidemark-image:", err)
		os.Exit(1)
	}
}

type binaries []image.Binary

func (b *binaries) String() string { return fmt.Sprint(*b) }

func (b *binaries) Set(s string) error {
	platform, path, ok := strings.Cut(s, "=")
	osName, arch, ok2 := strings.Cut(platform, "/")
	if !ok || !ok2 || path == "" {
		return fmt.Errorf("--binary %q: want OS/ARCH=PATH", s)
	}
	*b = append(*b, image.Binary{OS: osName, Arch: arch, Path: path})
	return nil
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: tidemark-image build|push|check [flags]")
	}
	fs := flag.NewFlagSet("tidemark-image "+args[0], flag.ContinueOnError)
	switch args[0] {
	case "build":
		var o image.Options
		var bins binaries
		var out string
		var created int64
		fs.StringVar(&out, "out", "bin/image", "OCI layout directory to write")
		fs.StringVar(&o.Version, "version", "", "version (org.opencontainers.image.version, and the layout's tag)")
		fs.StringVar(&o.Revision, "revision", "", "commit (org.opencontainers.image.revision)")
		fs.StringVar(&o.Source, "source", "", "repository URL (org.opencontainers.image.source)")
		fs.StringVar(&o.CACerts, "ca-certs", "/etc/ssl/certs/ca-certificates.crt", "CA bundle to ship")
		fs.Int64Var(&created, "created", 0, "creation time in Unix seconds (the commit time or SOURCE_DATE_EPOCH)")
		fs.Var(&bins, "binary", "OS/ARCH=PATH of a static binary; repeat per platform")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		o.Binaries = bins
		o.Created = time.Unix(created, 0)
		idx, err := image.Build(o)
		if err != nil {
			return err
		}
		if err := image.WriteLayout(out, idx, o.Version); err != nil {
			return err
		}
		d, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s %s\n", out, d)
		return nil
	case "push":
		var dir, to string
		fs.StringVar(&dir, "layout", "bin/image", "OCI layout written by build")
		fs.StringVar(&to, "to", "", "repository to push to, host/path")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		ref, err := image.Push(dir, to)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, ref)
		return nil
	case "check":
		var dir, version, revision string
		fs.StringVar(&dir, "layout", "bin/image", "OCI layout written by build")
		fs.StringVar(&version, "version", "", "the version it must be")
		fs.StringVar(&revision, "revision", "", "the commit it must be built from")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return image.Current(dir, version, revision)
	}
	return fmt.Errorf("unknown command %q: want build, push or check", args[0])
}
