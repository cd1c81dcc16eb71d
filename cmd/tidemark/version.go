package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
	"github.com/tidemark-dev/tidemark/internal/cli"
)

// version and commit are set by the Makefile:
//
//	-ldflags "-X main.version=$(VERSION) -X main.commit=$(COMMIT)"
//
// A plain `go build` leaves them empty; buildVersion then reads what the Go
// toolchain stamped into the binary (the module version and VCS revision).
var (
	version string
	commit  string
)

// buildVersion is the version and commit to print, never empty.
func buildVersion(info *debug.BuildInfo, ok bool) (v, c string) {
	v, c = version, commit
	if ok {
		if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		if c == "" {
			var rev string
			dirty := false
			for _, s := range info.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					dirty = s.Value == "true"
				}
			}
			if len(rev) > 12 {
				rev = rev[:12]
			}
			if rev != "" && dirty {
				rev += "-dirty"
			}
			c = rev
		}
	}
	if v == "" {
		v = "dev"
	}
	if c == "" {
		c = "unknown"
	}
	return v, c
}

func versionLine() string {
	v, c := buildVersion(debug.ReadBuildInfo())
	return fmt.Sprintf("tidemark %s (commit %s)", v, c)
}

func newVersionCmd(e *cli.Env) *cobra.Command {
	var o cli.OutputFlag
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the build's version and commit",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := o.Check(); err != nil {
				return err
			}
			v, c := buildVersion(debug.ReadBuildInfo())
			return o.PrintValue(e.Stdout, struct {
				Version string `json:"version"`
				Commit  string `json:"commit"`
			}{v, c}, func() error {
				_, err := fmt.Fprintln(e.Stdout, versionLine())
				return err
			})
		},
	}
	o.Register(cmd)
	return cmd
}

// plainVersion is the build's version alone (GET /api/v1/status).
func plainVersion() string {
	v, _ := buildVersion(debug.ReadBuildInfo())
	return v
}
