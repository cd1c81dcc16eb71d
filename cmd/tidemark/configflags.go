package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/tidemark-dev/tidemark/internal/cli"
	"github.com/tidemark-dev/tidemark/internal/config"
)

// configFlags are the flags of every command that reads the configuration.
type configFlags struct {
	path      string
	logFormat string
}

func (f *configFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.path, "config", "", "configuration file (default $TIDEMARK_CONFIG)")
	cmd.Flags().StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
}

// load reads the configuration named by --config or TIDEMARK_CONFIG and
// makes the logger. Warnings go to the log; problems come back as one error
// whose lines each name the file, line, item and problem.
func (f *configFlags) load(e *cli.Env) (*config.Config, *slog.Logger, error) {
	var h slog.Handler
	switch f.logFormat {
	case "text":
		h = slog.NewTextHandler(e.Stderr, nil)
	case "json":
		h = slog.NewJSONHandler(e.Stderr, nil)
	default:
		return nil, nil, fmt.Errorf("--log-format %q: want text or json", f.logFormat)
	}
	log := slog.New(h)
	path := f.path
	if path == "" {
		path = e.Getenv("TIDEMARK_CONFIG")
	}
	if path == "" {
		return nil, nil, fmt.Errorf("no configuration: pass --config FILE or set TIDEMARK_CONFIG")
	}
	cfg, err := config.Load(path, e.Getenv)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	return cfg, log, nil
}
