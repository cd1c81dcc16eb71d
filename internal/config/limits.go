package config

import (
	"time"

	"gopkg.in/yaml.v3"
)

// Connection limits (CONTRACT section 16).
const (
	DefaultMaxConnections           = 10000
	DefaultMaxConnectionsPerAddress = 256
	DefaultMaxConnectionsPerNetwork = 1024
	DefaultIdleTimeout              = 60 * time.Second
)

// Limits is the top-level `limits:` block: what the listener holds open.
type Limits struct {
	MaxConnections           int // in all
	MaxConnectionsPerAddress int // per TCP peer; trusted proxies are exempt
	MaxConnectionsPerNetwork int // per IPv4 /24 or IPv6 /64; trusted proxies are exempt
	IdleTimeout              time.Duration
}

func (p *parser) limits(n *yaml.Node) Limits {
	out := Limits{MaxConnections: DefaultMaxConnections, MaxConnectionsPerAddress: DefaultMaxConnectionsPerAddress,
		MaxConnectionsPerNetwork: DefaultMaxConnectionsPerNetwork, IdleTimeout: DefaultIdleTimeout}
	if isNull(deref(n)) {
		return out
	}
	f := p.mapping(n, "", "limits", []string{"max_connections", "max_connections_per_address", "max_connections_per_network", "idle_timeout"})
	for _, k := range []struct {
		key string
		to  *int
	}{{"max_connections", &out.MaxConnections}, {"max_connections_per_address", &out.MaxConnectionsPerAddress},
		{"max_connections_per_network", &out.MaxConnectionsPerNetwork}} {
		if i, ok := p.integer(f[k.key], "", "limits."+k.key); ok {
			if i < 1 {
				p.add(deref(f[k.key]), "", "limits.%s: want 1 or more, got %d", k.key, i)
			} else {
				*k.to = i
			}
		}
	}
	if out.MaxConnectionsPerAddress > out.MaxConnections {
		p.add(deref(n), "", "limits: max_connections_per_address %d is above max_connections %d", out.MaxConnectionsPerAddress, out.MaxConnections)
	}
	if d, ok := p.duration(f["idle_timeout"], "", "limits.idle_timeout"); ok {
		if d <= 0 {
			p.add(deref(f["idle_timeout"]), "", "limits.idle_timeout: want a positive duration like 60s, got %s", d)
		} else {
			out.IdleTimeout = d
		}
	}
	return out
}
