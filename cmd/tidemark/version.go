package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
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

func newVersionCmd(e *env) *cobra.Command {
	var o outputFlag
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the build's version and commit",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := o.check(); err != nil {
				return err
			}
			v, c := buildVersion(debug.ReadBuildInfo())
			return o.printValue(e.stdout, struct {
				Version string `json:"version"`
				Commit  string `json:"commit"`
			}{v, c}, func() error {
				_, err := fmt.Fprintln(e.stdout, versionLine())
				return err
			})
		},
	}
	o.register(cmd)
	return cmd
}
