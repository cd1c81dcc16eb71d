package main

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tidemark-dev/tidemark/indexer"
	"github.com/tidemark-dev/tidemark/internal/cli"
	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/internal/notify"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store"
)

func newConfigCmd(e *cli.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check a configuration file",
		Args:  cobra.NoArgs,
	}
	var path string
	check := &cobra.Command{
		Use:   "check [FILE]",
		Short: "Validate a configuration file and print what it resolves to",
		Long: "Validates FILE (or --config, or $TIDEMARK_CONFIG) as serve would, prints every\n" +
			"problem (one line each, exit 1) or the sources and channels it declares, with\n" +
			"defaults and environment overrides applied.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := path
			if len(args) == 1 {
				file = args[0]
			}
			if file == "" {
				file = e.Getenv("TIDEMARK_CONFIG")
			}
			if file == "" {
				return fmt.Errorf("config check: no file: give FILE, --config FILE or set TIDEMARK_CONFIG")
			}
			return checkConfig(e, file)
		},
	}
	check.Flags().StringVar(&path, "config", "", "configuration file (default $TIDEMARK_CONFIG)")
	cmd.AddCommand(check)
	return cli.CommandGroup(cmd)
}

func checkConfig(e *cli.Env, file string) error {
	cfg, err := config.Load(file, e.Getenv)
	var problems *config.Error
	if errors.As(err, &problems) {
		// One line per problem, each naming file and line, as an editor
		// or CI log wants them.
		fmt.Fprintln(e.Stderr, err)
		return exitError{code: 1}
	}
	if err != nil {
		return err // an unreadable file: one line, tidemark: first
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(e.Stderr, "warning: "+w)
	}
	if cfg.OIDC != nil {
		// serve refuses to start with it: say so now.
		if err := cfg.OIDC.CheckSecret(); err != nil {
			fmt.Fprintln(e.Stderr, err)
			return exitError{code: 1}
		}
	}
	return printConfig(e.Stdout, cfg)
}

// printConfig writes the configuration as a person reviews it: effective
// values only, defaults spelled out, secrets never shown.
func printConfig(w io.Writer, cfg *config.Config) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")) }

	external := cfg.ExternalURL
	if external == "" {
		external = "(from each request)"
	}
	row("file", cfg.File)
	row("listen", cfg.Listen)
	row("external_url", external)
	row("database_url", redactDB(cfg.DatabaseURL))
	row("access_log", cfg.AccessLog)
	row("read_timeout", config.ShortDuration(cfg.ReadTimeout))
	row("database_timeout", config.ShortDuration(cfg.DatabaseTimeout))
	row("limits", fmt.Sprintf("%d connections, %d per address, %d per network, idle %s", cfg.Limits.MaxConnections,
		cfg.Limits.MaxConnectionsPerAddress, cfg.Limits.MaxConnectionsPerNetwork, config.ShortDuration(cfg.Limits.IdleTimeout)))
	row("fleet", fleetText(cfg.Fleet))
	row("")

	row("SOURCE", "IMAGE", "SCHEME", "BUILD", "INTERVAL", "EXCLUDE", "OPTIONS")
	for _, s := range cfg.Sources {
		row(s.Name, s.Image, string(s.Scheme), dash(s.Build), config.ShortDuration(s.Interval), dash(reString(s.Exclude)), sourceOptions(s))
	}
	row("")

	row("REGISTRY", "RATE LIMIT")
	hosts := make([]string, 0, len(cfg.Registries))
	for h := range cfg.Registries {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		limit := "unlimited"
		if r := cfg.Registries[h].RateLimit; r > 0 {
			limit = fmt.Sprintf("%g/s", r)
		}
		row(h, limit)
	}
	row("")

	row("CHANNEL", "SOURCE", "STREAM", "CONSTRAINT", "INCLUDE", "EXCLUDE", "LATEST", "BUILDS", "REDIRECT", "OPTIONS")
	for _, c := range cfg.Channels {
		builds := "no"
		if c.Builds {
			builds = "yes"
		}
		row(c.Name, c.Source, c.Stream.String(), dash(c.ConstraintText), dash(reString(c.Include)),
			dash(reString(c.Exclude)), dash(c.Latest), builds, redirectOf(cfg, c), dash(channelOptions(c)))
	}
	if len(cfg.Notify) > 0 || cfg.Webhooks != (config.Webhooks{MaxPending: indexer.DefaultMaxPending}) {
		row("")
		printNotify(row, cfg)
	}
	return tw.Flush()
}

// channelOptions are a channel's per-cluster settings: stepwise (with its
// settle), rollout and soak.
func channelOptions(c catalog.Channel) string {
	var opts []string
	if c.Stepwise {
		opts = append(opts, "stepwise")
		if c.Settle > 0 {
			opts = append(opts, "settle="+config.ShortDuration(c.Settle))
		}
	}
	if r := c.Rollout; r != nil {
		steps := make([]string, len(r.Steps))
		for i, p := range r.Steps {
			steps[i] = strconv.Itoa(p)
		}
		opts = append(opts, fmt.Sprintf("rollout=%s%%/%s", strings.Join(steps, ","), config.ShortDuration(r.Interval)))
	}
	if c.Soak != nil {
		opts = append(opts, "soak="+config.ShortDuration(*c.Soak))
	}
	if c.Approvals > 0 {
		ttl := c.ApprovalTTL
		if ttl <= 0 {
			ttl = config.DefaultApprovalTTL
		}
		opts = append(opts, fmt.Sprintf("approvals=%d approval_ttl=%s", c.Approvals, config.ShortDuration(ttl)))
	}
	for _, w := range c.Windows {
		opts = append(opts, "window="+windowText(w))
	}
	if p := c.Promote; p != nil {
		opts = append(opts, fmt.Sprintf("promote=from:%s,soak:%s,min_adopted:%d,max_stuck_ratio:%g",
			p.From, config.ShortDuration(p.Soak), p.MinAdopted, p.MaxStuckRatio))
	}
	if y := c.Yank; y != nil {
		opts = append(opts, fmt.Sprintf("yank=min_told:%d,max_stuck_ratio:%g", y.MinTold, y.MaxStuckRatio))
	}
	return strings.Join(opts, " ")
}

// fleetText is the fleet: block with its defaults spelled out.
func fleetText(f config.Fleet) string {
	out := fmt.Sprintf("retention %s, active_window %s, stuck_after %s, %d new clusters/min per address, at most %d clusters a channel",
		config.ShortDuration(f.Retention), config.ShortDuration(f.ActiveWindow), config.ShortDuration(f.StuckAfter),
		f.NewClustersPerMinute, f.MaxClusters)
	if len(f.EvidenceNetworks) > 0 {
		nets := make([]string, len(f.EvidenceNetworks))
		for i, n := range f.EvidenceNetworks {
			nets[i] = n.String()
		}
		out += ", evidence from " + strings.Join(nets, ",")
	}
	return out
}

// windowText is a window as written: days, start-end and zone.
func windowText(w resolver.Window) string {
	names := []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
	var days []string
	for i := 1; i <= 7; i++ { // mon first, as people write them
		if d := i % 7; w.Days[d] {
			days = append(days, names[d])
		}
	}
	clock := func(m int) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }
	zone := "UTC"
	if w.Location != nil {
		zone = w.Location.String()
	}
	return strings.Join(days, ",") + "/" + clock(w.Start) + "-" + clock(w.End) + "/" + zone
}

// printNotify lists the notification endpoints and which registry
// webhooks have a secret.
func printNotify(row func(...string), cfg *config.Config) {
	if len(cfg.Notify) > 0 {
		row("NOTIFY", "KIND", "URL", "SIGNED", "CHANNELS")
		for _, n := range cfg.Notify {
			signed := "no"
			if n.SecretFile != "" {
				signed = "secret_file=" + n.SecretFile
			}
			channels := "(all)"
			if len(n.Channels) > 0 {
				channels = strings.Join(n.Channels, ",")
			}
			kind := n.Kind
			if kind == "" {
				kind = "webhook"
			}
			row(n.Name, kind, notify.RedactURL(n.URL), signed, channels)
		}
	}
	if w := cfg.Webhooks; w != (config.Webhooks{MaxPending: indexer.DefaultMaxPending}) {
		var secrets []string
		if w.GitHubSecretFile != "" {
			secrets = append(secrets, "github_secret_file="+w.GitHubSecretFile)
		}
		if w.DockerHubSecretFile != "" {
			secrets = append(secrets, "dockerhub_secret_file="+w.DockerHubSecretFile)
		}
		if w.MaxPending != indexer.DefaultMaxPending {
			secrets = append(secrets, fmt.Sprintf("max_pending=%d", w.MaxPending))
		}
		row("webhooks", strings.Join(secrets, " "))
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func reString(re *regexp.Regexp) string {
	if re == nil {
		return ""
	}
	return re.String()
}

func sourceOptions(s config.Source) string {
	opts := []string{
		fmt.Sprintf("concurrency=%d", s.Concurrency),
		"timeout=" + config.ShortDuration(s.Timeout),
	}
	if s.Recheck < 0 {
		opts = append(opts, "recheck=never")
	} else if s.Recheck != config.DefaultRecheck {
		opts = append(opts, "recheck="+config.ShortDuration(s.Recheck))
	}
	if s.Insecure {
		opts = append(opts, "insecure")
	}
	switch {
	case s.PasswordFile != "":
		opts = append(opts, fmt.Sprintf("user=%s password_file=%s", s.Username, s.PasswordFile))
	case s.PasswordEnv != "":
		opts = append(opts, fmt.Sprintf("user=%s password_env=%s", s.Username, s.PasswordEnv))
	}
	var labels []string
	for l, st := range s.Labels {
		if def, ok := resolver.DefaultLabels[l]; !ok || def != st {
			labels = append(labels, l+":"+st.String())
		}
	}
	if len(labels) > 0 {
		sort.Strings(labels)
		opts = append(opts, "labels="+strings.Join(labels, ","))
	}
	if g := s.Gates; len(g.Platforms) > 0 {
		opts = append(opts, "gates.platforms="+strings.Join(g.Platforms, ","))
	}
	if g := s.Gates; g.SignatureKeyFile != "" {
		opts = append(opts, "gates.signature="+g.SignatureKeyFile)
	}
	if g := s.Gates; g.Soak > 0 {
		opts = append(opts, "gates.soak="+config.ShortDuration(g.Soak))
	}
	return strings.Join(opts, " ")
}

// redirectOf shows where a channel's 302 points, including the default
// that the server derives (CONTRACT section 3).
func redirectOf(cfg *config.Config, c catalog.Channel) string {
	if c.Redirect != "" {
		return c.Redirect
	}
	base := cfg.ExternalURL
	if base == "" {
		base = "(request)"
	}
	return base + "/api/v1/sources/" + c.Source + "/versions/"
}

// redactDB keeps a database URL recognisable without printing its password.
func redactDB(s string) string { return strings.Trim(store.RedactURL(s), `"`) }
