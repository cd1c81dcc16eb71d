package config

import (
	"time"

	"gopkg.in/yaml.v3"
)

// TUF is the top-level `tuf:` block: signed answers.
type TUF struct {
	// OnlineKeyFile is the online key that signs targets, snapshot and
	// timestamp; only serve reads it (tidemark tuf init makes it).
	OnlineKeyFile string
	// Expires are the roles' lifetimes; each is re-signed before half.
	Root, Targets, Snapshot, Timestamp time.Duration
}

// TUF defaults.
const (
	DefaultTUFRoot      = 365 * 24 * time.Hour
	DefaultTUFTargets   = 30 * 24 * time.Hour
	DefaultTUFSnapshot  = 7 * 24 * time.Hour
	DefaultTUFTimestamp = 24 * time.Hour
)

func (p *parser) tuf(n *yaml.Node) *TUF {
	if isNull(deref(n)) {
		return nil
	}
	f := p.mapping(n, "", "tuf", []string{"online_key_file", "expires"})
	out := &TUF{Root: DefaultTUFRoot, Targets: DefaultTUFTargets, Snapshot: DefaultTUFSnapshot, Timestamp: DefaultTUFTimestamp}
	if s, ok := p.str(f["online_key_file"], "tuf", "online_key_file"); ok && s != "" {
		out.OnlineKeyFile = s
	} else {
		p.add(deref(n), "tuf", "online_key_file: missing (tidemark tuf init --root-key FILE --online-key FILE makes it)")
	}
	if isNull(deref(f["expires"])) {
		return out
	}
	e := p.mapping(f["expires"], "tuf", "expires", []string{"root", "targets", "snapshot", "timestamp"})
	for _, k := range []struct {
		key string
		to  *time.Duration
	}{{"root", &out.Root}, {"targets", &out.Targets}, {"snapshot", &out.Snapshot}, {"timestamp", &out.Timestamp}} {
		if d, ok := p.duration(e[k.key], "tuf", "expires."+k.key); ok {
			if d < time.Minute {
				p.add(deref(e[k.key]), "tuf", "expires.%s: want a duration of a minute or more like 24h, got %s", k.key, d)
			} else {
				*k.to = d
			}
		}
	}
	return out
}
