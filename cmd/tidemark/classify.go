package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tidemark-dev/tidemark/internal/cli"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// schemeFlags are the flags classify and sort share: how to read a tag.
type schemeFlags struct {
	scheme string
	build  string
}

func (f *schemeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.scheme, "scheme", "", "version scheme: juju or semver (required)")
	cmd.Flags().StringVar(&f.build, "build", "", "semver only: regexp of a trailing [-+] build suffix whose first group is the build number, e.g. 'k3s(\\d+)'")
}

// parser builds the parser; a bad flag is a usage error (exit 2) reported
// on one line.
func (f *schemeFlags) parser(e *cli.Env, name string) (*resolver.Parser, error) {
	if f.scheme == "" {
		return nil, usageError(e, name, "--scheme is required (juju or semver)")
	}
	p, err := resolver.NewParser(resolver.Scheme(f.scheme), f.build)
	if err != nil {
		return nil, usageError(e, name, err.Error())
	}
	return p, nil
}

func usageError(e *cli.Env, name, msg string) error {
	fmt.Fprintf(e.Stderr, "tidemark %s: %s\n", name, msg)
	return exitError{code: 2}
}

// flagUsageError makes unknown or malformed flags exit 2 like bad values do.
func flagUsageError(e *cli.Env, name string) func(*cobra.Command, error) error {
	return func(_ *cobra.Command, err error) error { return usageError(e, name, err.Error()) }
}

// noArgs refuses arguments as a usage error: tags come on stdin.
func noArgs(e *cli.Env, name string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageError(e, name, fmt.Sprintf("unexpected argument %q (tags are read on stdin)", args[0]))
		}
		return nil
	}
}

// classified is one output line of classify. Every key is always present so
// that scripts can rely on the shape. CONTRACT section 4 fixes its keys and
// their order ("valid" second), which is why it is not openapi.Version.
type classified struct {
	Tag       string `json:"tag"`
	Valid     bool   `json:"valid"`
	Version   string `json:"version"`
	Major     int    `json:"major"`
	Minor     int    `json:"minor"`
	Patch     int    `json:"patch"`
	Pre       string `json:"pre"`
	PreNumber int    `json:"pre_number"`
	Build     int    `json:"build"`
	Stream    string `json:"stream"`
	Error     string `json:"error"`
}

func newClassifyCmd(e *cli.Env) *cobra.Command {
	var f schemeFlags
	cmd := &cobra.Command{
		Use:   "classify --scheme juju|semver [--build PATTERN]",
		Short: "Classify tags read on stdin",
		Long: `Classify reads registry tags on stdin, one per line (blank lines are
skipped), and writes one JSON object per tag on stdout:

  {"tag","valid","version","major","minor","patch","pre","pre_number","build","stream","error"}

version is the canonical string, stream the stream name. A tag that is not a
version has valid false, error saying why, and every other field empty.`,
		Example: `  printf 'v1.33.6-k3s1\nv1.34.0-rc1-k3s1\nlatest\n' | tidemark classify --scheme semver --build 'k3s(\d+)'`,
		Args:    noArgs(e, "classify"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := f.parser(e, "classify")
			if err != nil {
				return err
			}
			src := catalog.Source{Parser: p}
			out := bufio.NewWriterSize(e.Stdout, 64<<10)
			enc := json.NewEncoder(out)
			enc.SetEscapeHTML(false)
			err = eachTag(e.Stdin, func(tag string) error {
				t := src.Classify(tag)
				c := classified{Tag: tag, Valid: t.Valid, Error: t.ParseError()}
				if t.Valid {
					v := t.Version
					c.Version, c.Major, c.Minor, c.Patch = v.String(), v.Major, v.Minor, v.Patch
					c.Pre, c.PreNumber, c.Build, c.Stream = v.Pre(), v.PreNumber, v.Build, t.Stream.String()
				}
				return enc.Encode(c)
			})
			if err != nil {
				return err
			}
			return out.Flush()
		},
	}
	f.register(cmd)
	cmd.SetFlagErrorFunc(flagUsageError(e, "classify"))
	return cmd
}

func newSortCmd(e *cli.Env) *cobra.Command {
	var f schemeFlags
	var canonical bool
	cmd := &cobra.Command{
		Use:   "sort --scheme juju|semver [--build PATTERN] [--canonical]",
		Short: "Sort the valid tags read on stdin",
		Long: `Sort reads registry tags on stdin, one per line (blank lines are skipped),
and prints the tags that are versions, as given, in ascending version order.
Tags that are not versions are left out. Tags naming the same version (as
v1.33.6-k3s1 and v1.33.6+k3s1) keep their input order. With --canonical the
canonical version strings are printed instead of the tags.`,
		Example: `  crane ls docker.io/rancher/k3s-upgrade | tidemark sort --scheme semver --build 'k3s(\d+)' | tail -1`,
		Args:    noArgs(e, "sort"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := f.parser(e, "sort")
			if err != nil {
				return err
			}
			type item struct {
				tag string
				v   resolver.Version
			}
			var items []item
			err = eachTag(e.Stdin, func(tag string) error {
				if v, err := p.Parse(tag); err == nil {
					items = append(items, item{tag, v})
				}
				return nil
			})
			if err != nil {
				return err
			}
			slices.SortStableFunc(items, func(a, b item) int { return resolver.Compare(a.v, b.v) })
			out := bufio.NewWriterSize(e.Stdout, 64<<10)
			for _, it := range items {
				s := it.tag
				if canonical {
					s = it.v.String()
				}
				out.WriteString(s)
				out.WriteByte('\n')
			}
			return out.Flush()
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&canonical, "canonical", false, "print canonical versions instead of the tags")
	cmd.SetFlagErrorFunc(flagUsageError(e, "sort"))
	return cmd
}

// eachTag calls fn for every non-blank line of r, without its line ending.
func eachTag(r io.Reader, fn func(tag string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		tag := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(tag) == "" {
			continue
		}
		if err := fn(tag); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading tags on stdin after line %d: %w", line, err)
	}
	return nil
}
