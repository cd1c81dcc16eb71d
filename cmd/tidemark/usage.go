package main

import (
	"fmt"
	"regexp"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tidemark-dev/tidemark/internal/config"
)

// explainMistakes makes the command line's own errors say what to type:
// a wrong number of arguments adds the command's usage line, an unknown
// flag the nearest one it has.
func explainMistakes(root *cobra.Command) {
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if m := unknownFlag.FindStringSubmatch(err.Error()); m != nil {
			var names []string
			c.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, "--"+f.Name) })
			c.InheritedFlags().VisitAll(func(f *pflag.Flag) { names = append(names, "--"+f.Name) })
			return fmt.Errorf("%s: %w%s\nusage: %s", c.CommandPath(), err, config.DidYouMean(m[1], names), c.UseLine())
		}
		return fmt.Errorf("%s: %w\nusage: %s", c.CommandPath(), err, c.UseLine())
	})
	var wrap func(c *cobra.Command)
	wrap = func(c *cobra.Command) {
		if args := c.Args; args != nil {
			c.Args = func(c *cobra.Command, a []string) error {
				if err := args(c, a); err != nil {
					return fmt.Errorf("%s: %w\nusage: %s", c.CommandPath(), err, c.UseLine())
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			wrap(sub)
		}
	}
	wrap(root)
}

var unknownFlag = regexp.MustCompile(`^unknown flag: (--\S+)`)
